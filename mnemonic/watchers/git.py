"""The git watcher: new commits, branch switches and working-tree changes in the
repositories under the configured roots.

Each poll costs a few ``stat`` calls per repository (``HEAD``, the HEAD reflog, the
current branch's ref, ``packed-refs``, the index); git runs only for a repository whose
signature changed, and never while ``index.lock`` exists (a commit or checkout is under
way: the poll is deferred rather than reading a half-written state).

What happened is read from the HEAD reflog (``logs/HEAD``), in order, from where the last
poll stopped: ``checkout: moving from a to b`` is a branch switch; every other move
(commit, amend, merge, pull, cherry-pick, rebase pick, reset) brings the commits reachable
from the new head and not from the old one. So a commit followed at once by a switch is
still seen, and a commit seen twice (reset back and forth) is emitted once. A repository
without a HEAD reflog (``core.logAllRefUpdates=false``) is compared HEAD to HEAD instead.
At most ``max_commits_per_poll`` commit events are emitted per repository per poll; older
ones in the same burst (a pull of 500 commits) become one ``commit_batch`` event. A commit
or checkout touching more than ``max_files_listed`` files is one event naming counts and its
busiest folders, never one per file.

Working-tree changes come from ``git status``, which walks the tree: it runs for at most one
repository per poll, at most every ``worktree_interval_s`` per repository (sooner after the
index changed), and under a CPU budget shared by all repositories, so a hundred idle repos
cost a bounded fraction of a core. An event is emitted only when the set of changed paths
differs from the last one reported, at most once per ``worktree_min_gap_s`` per repository.

What was seen is kept across restarts (``git_state``: per repository HEAD, every local
branch's tip and the reflog position, saved after each change). The first look after a
start resumes from there, so commits made while the daemon was down are told like any
others (bounded the same way, marked ``detected_by: catch_up``). A repository with no saved
state is new to the watcher: one created after the watcher last looked is replayed from its
first reflog entry; any other contributes at most ``initial_commits`` commits of its
current branch from the last ``initial_max_age_days`` (``detected_by: first_sight``), never
its whole history.

New repositories are found three ways: the full search every ``rediscover_interval_s``;
a round-robin ``stat`` of the folders that search listed (``FolderWatch``,
``new_repo_checks_per_poll`` a poll), which notices a folder gaining ``.git`` within
seconds; and hints from the
filesystem watcher (``hint``, called on its thread when a ``.git`` appears under one of
its roots), which the composition root connects. Without a ``git`` binary the watcher
reports ``disabled`` and returns.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import shutil
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mnemonic.config import GitConfig
from mnemonic.events.types import WatcherEvent
from mnemonic.runtime.clock import Clock, SystemClock
from mnemonic.watchers.base import Emit, WatcherHealth
from mnemonic.watchers.git_discovery import (
    DiscoveryLimits,
    Folder,
    FolderWatch,
    RepoLocation,
    expand_roots,
    find_worktrees,
    hinted_worktree,
    locate,
)
from mnemonic.watchers.git_events import EventBuilder
from mnemonic.watchers.git_parse import ReflogEntry
from mnemonic.watchers.git_reader import (
    GitFailed,
    GitRunner,
    Head,
    ReflogPosition,
    branch_tips,
    git_version,
    read_head,
    read_reflog,
    recent_commits,
    reflog_end,
    status_summary,
)
from mnemonic.watchers.git_state import RepoState, SavedStates, load_states, save_states

log = logging.getLogger(__name__)

WATCHER = "git"
_EMITTED_MEMORY = 4096  # commit hashes remembered per repository to emit each once
_MAX_HINTS = 256  # folders other watchers told of, waiting for the next poll


_Stat = tuple[int, int, int] | None


def _stat(path: Path) -> _Stat:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(slots=True)
class _Repo:
    """What the watcher remembers about one repository between polls."""

    loc: RepoLocation
    replay_after: datetime | None = None  # found after start: replay entries newer than this
    signature: tuple[_Stat, ...] | None = None
    index: _Stat = None
    reflog: ReflogPosition | None = None
    head: Head | None = None
    emitted: OrderedDict[str, None] = field(default_factory=OrderedDict)
    status_digest: str | None = None
    status_due: float = 0.0
    last_worktree_event: float | None = None
    failing: bool = False
    more: bool = False  # the reflog has more than one poll's worth of new entries
    tips: dict[str, str] = field(default_factory=dict)  # local branch -> sha, as last seen
    origin: str | None = None  # detected_by of the first look: catch_up | first_sight
    initial: bool = False  # no saved state and not replayed: import a few recent commits

    def saved(self) -> RepoState | None:
        if self.head is None:
            return None
        return RepoState(self.head, self.reflog, dict(self.tips))

    @property
    def locked(self) -> bool:
        return (self.loc.git_dir / "index.lock").exists()

    def current_signature(self) -> tuple[_Stat, ...]:
        branch = self.head.branch if self.head else None
        ref = self.loc.common_dir / "refs" / "heads" / branch if branch else None
        return (
            _stat(self.loc.git_dir / "HEAD"),
            _stat(self.loc.git_dir / "logs" / "HEAD"),
            _stat(self.loc.common_dir / "packed-refs"),
            _stat(ref) if ref else None,
        )

    def remember(self, sha: str) -> bool:
        """Whether ``sha`` is new to this repository (and note it)."""
        if sha in self.emitted:
            return False
        self.emitted[sha] = None
        if len(self.emitted) > _EMITTED_MEMORY:
            self.emitted.popitem(last=False)
        return True


_RepoStep = Callable[[_Repo], list[WatcherEvent]]


class GitWatcher:
    """Polls the repositories under ``config.roots``; see the module docstring."""

    name = WATCHER

    def __init__(
        self, config: GitConfig, *, clock: Clock | None = None, state_path: Path | None = None
    ) -> None:
        self._config = config
        self._clock = clock or SystemClock()
        self._state_path = state_path
        self._saved = SavedStates({}, None)
        self._dirty = False
        self._hints: deque[Path] = deque(maxlen=_MAX_HINTS)
        self._limits = DiscoveryLimits(config.max_depth, max_repos=config.max_repos)
        self._folder_watch = FolderWatch(self._limits, frozenset(config.ignore_dirs))
        self._repos: dict[Path, _Repo] = {}
        self._runner: GitRunner | None = None
        self._events: EventBuilder | None = None
        self._next_discovery = 0.0
        self._discovered_at: datetime | None = None
        self._next_status = 0.0
        self._health = WatcherHealth()
        self._counts = {
            "polls": 0,
            "deferred": 0,
            "status_runs": 0,
            "errors": 0,
            "caught_up": 0,
            "found_between_searches": 0,
            "hints": 0,
        }
        self._status_seconds = 0.0
        self._truncated = False

    def health(self) -> WatcherHealth:
        self._health.detail = {
            **self._counts,
            "repositories": len(self._repos),
            "folders_watched": len(self._folder_watch),
            "discovery_truncated": self._truncated,
            "status_seconds": round(self._status_seconds, 3),
            "git": self._runner.binary if self._runner else None,
        }
        return self._health

    @property
    def repositories(self) -> list[Path]:
        return sorted(self._repos)

    # --- lifecycle ---------------------------------------------------------------------------

    async def run(self, emit: Emit) -> None:
        try:
            if not await self.start():
                return
            while True:
                await self.poll_once(emit)
                await self._clock.sleep(self._config.poll_interval_s)
        finally:
            if self._health.state != "disabled":
                self._health.state = "stopped"

    async def start(self) -> bool:
        """Find git and the repositories; False (health ``disabled``) when git cannot run."""
        if not self._config.enabled:
            self._disable("git watcher disabled in config (git.enabled: false)")
            return False
        os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")
        binary = shutil.which(self._config.git_binary)
        if binary is None:
            self._disable(
                f"no git binary found ({self._config.git_binary!r} is not on PATH); install "
                "git or set git.git_binary to its path"
            )
            return False
        try:
            version = await asyncio.to_thread(git_version, binary, self._config.command_timeout_s)
        except GitFailed as exc:
            self._disable(f"git at {binary} does not run ({exc}); fix it or set git.git_binary")
            return False
        self._runner = GitRunner(binary, self._config.command_timeout_s)
        self._events = EventBuilder(self._runner, self._config)
        if self._state_path is not None and self._discovered_at is None:
            self._saved = await asyncio.to_thread(load_states, self._state_path)
        await self.discover()
        self._health.state = "running"
        log.info("git watcher: %s, %d repositories", version, len(self._repos))
        return True

    def _disable(self, message: str) -> None:
        self._health.state = "disabled"
        self._health.message = message
        self._health.warnings += 1
        log.warning("git watcher disabled: %s", message)

    async def discover(self) -> None:
        """Search the roots again; new repositories are added, vanished ones dropped."""
        found, folders = await asyncio.to_thread(self._find)
        first = self._discovered_at is None
        previous = self._discovered_at
        self._discovered_at = datetime.now(UTC)
        self._folder_watch.reset(folders)
        for loc in found:
            if loc.worktree not in self._repos:
                self._repos[loc.worktree] = self._new_repo(loc, first, previous)
        for path in [p for p in self._repos if p not in {loc.worktree for loc in found}]:
            del self._repos[path]
            self._dirty = True
        if self._repos:
            self._health.message = None
        else:
            self._health.message = (
                f"no git repositories found under {', '.join(self._config.roots)}"
            )
        self._next_discovery = self._clock.now() + self._config.rediscover_interval_s

    def _new_repo(self, loc: RepoLocation, first: bool, previous: datetime | None) -> _Repo:
        """How to take the first look at a repository: resume from its saved state, replay
        it (created since the watcher last looked), or import a few recent commits."""
        if not first:
            return _Repo(loc, replay_after=previous, initial=True)
        saved = self._saved.repos.get(str(loc.worktree))
        if saved is not None:
            return _Repo(
                loc,
                head=saved.head,
                reflog=saved.reflog,
                tips=dict(saved.branches),
                origin="catch_up",
            )
        # the state file exists but does not know it: new since the last run, replay it
        # if its reflog began after that (else it is old, newly under a root: first sight)
        return _Repo(loc, replay_after=self._saved.saved_at, initial=True)

    def _find(self) -> tuple[list[RepoLocation], dict[Path, Folder]]:
        cfg = self._config
        listed: dict[Path, Folder] = {}
        folders, self._truncated = find_worktrees(
            expand_roots(cfg.roots), self._limits, frozenset(cfg.ignore_dirs), folders=listed
        )
        if self._truncated:
            log.warning("git discovery stopped at a limit; lower git.max_depth or narrow roots")
        return self._locate(folders), listed

    @staticmethod
    def _locate(folders: list[Path]) -> list[RepoLocation]:
        located = (locate(folder) for folder in folders)
        return list({loc.worktree: loc for loc in located if loc is not None}.values())

    def hint(self, folder: str) -> None:
        """Another watcher saw a ``.git`` appear in ``folder``: look there at the next poll.
        Safe to call from any thread (a bounded deque append)."""
        self._hints.append(Path(folder))

    async def _find_new(self) -> None:
        """Repositories that appeared since the last full search: hinted folders and
        folders whose mtime changed (``new_repo_checks_per_poll`` ``stat`` calls per poll)."""
        hints = [self._hints.popleft() for _ in range(len(self._hints))]
        budget = self._config.new_repo_checks_per_poll
        if not hints and not budget:
            return
        self._counts["hints"] += len(hints)
        found = await asyncio.to_thread(self._find_new_blocking, hints, budget)
        for loc in found:
            if loc.worktree not in self._repos and len(self._repos) < self._config.max_repos:
                log.info("git watcher: new repository %s", loc.worktree)
                self._counts["found_between_searches"] += 1
                self._repos[loc.worktree] = _Repo(
                    loc, replay_after=self._discovered_at, initial=True
                )
                self._health.message = None

    def _find_new_blocking(self, hints: list[Path], budget: int) -> list[RepoLocation]:
        roots = expand_roots(self._config.roots)
        ignore = frozenset(self._config.ignore_dirs)
        candidates = self._folder_watch.check(budget) if budget else []
        for folder in hints:
            resolved = folder.resolve()
            if resolved not in self._repos and hinted_worktree(
                resolved, roots, self._limits, ignore
            ):
                candidates.append(resolved)
        fresh = [f for f in dict.fromkeys(candidates) if f.resolve() not in self._repos]
        return self._locate(fresh) if fresh else []

    # --- one poll ------------------------------------------------------------------------------

    async def poll_once(self, emit: Emit) -> None:
        """Check every repository once (and maybe one working tree); emit what changed."""
        if self._runner is None:
            raise RuntimeError("GitWatcher.start() must succeed before poll_once()")
        if self._clock.now() >= self._next_discovery:
            await self.discover()
        else:
            await self._find_new()
        self._counts["polls"] += 1
        changed = await asyncio.to_thread(self._changed_repos)
        for repo in changed:
            self._emit_all(emit, await asyncio.to_thread(self._guarded, self._observe, repo))
        if self._config.worktree_changes:
            candidate = self._status_candidate()
            if candidate is not None:
                events = await asyncio.to_thread(self._guarded, self._status, candidate)
                self._emit_all(emit, events)
        if self._dirty:
            await self._save()

    async def _save(self) -> None:
        """Write the state file (a few hundred bytes per repository) on a worker thread;
        a stop during the write waits for it, so what was emitted is not told again."""
        self._dirty = False
        if self._state_path is None:
            return
        states = {str(p): s for p, r in self._repos.items() if (s := r.saved()) is not None}
        save = asyncio.ensure_future(
            asyncio.to_thread(save_states, self._state_path, states, datetime.now(UTC))
        )
        try:
            await asyncio.shield(save)
        except asyncio.CancelledError:
            await save
            raise
        except OSError as exc:
            self._health.warnings += 1
            log.warning("git watcher cannot save its state %s: %s", self._state_path, exc)

    def _emit_all(self, emit: Emit, events: list[WatcherEvent]) -> None:
        for event in events:
            emit(event)
            self._health.events += 1

    def _changed_repos(self) -> list[_Repo]:
        changed: list[_Repo] = []
        now = self._clock.now()
        for repo in self._repos.values():
            if repo.locked:
                self._counts["deferred"] += 1
                continue
            index = _stat(repo.loc.git_dir / "index")
            if index != repo.index:
                repo.index = index
                repo.status_due = min(repo.status_due, now)
            if repo.current_signature() != repo.signature:
                changed.append(repo)
        return changed

    def _guarded(self, step: _RepoStep, repo: _Repo) -> list[WatcherEvent]:
        """Run ``step`` on a worker thread; a failing repository is logged once, not raised."""
        try:
            events = step(repo)
        except (GitFailed, OSError) as exc:
            self._counts["errors"] += 1
            if not repo.failing:
                repo.failing = True
                self._health.warnings += 1
                log.warning("git watcher: %s unreadable: %s", repo.loc.worktree, exc)
            return []
        if repo.failing:
            repo.failing = False
            log.info("git watcher: %s readable again", repo.loc.worktree)
        return events

    def _observe(self, repo: _Repo) -> list[WatcherEvent]:
        """The events since the last look at ``repo`` (runs on a worker thread)."""
        if repo.locked:
            self._counts["deferred"] += 1
            return []
        assert self._runner is not None and self._events is not None
        signature = repo.current_signature()
        try:
            head = read_head(self._runner, repo.loc)
            previous = repo.head
            entries = (
                self._first_entries(repo)
                if previous is None
                else self._next_entries(repo, previous, head)
            )
            recent = self._initial_commits(repo, head) if previous is None else []
            tips = branch_tips(self._runner, repo.loc)
        except (GitFailed, OSError):
            repo.signature = signature  # try again when the repository changes, not every poll
            raise
        repo.head, repo.tips = head, tips
        repo.signature = None if repo.more else signature
        self._dirty = True
        origin, repo.origin = repo.origin, None
        if origin == "catch_up":
            self._counts["caught_up"] += 1
        if recent:
            events = self._events.commits(repo.loc, recent, head.branch, repo.remember)
            origin = "first_sight"
        elif entries:
            events = self._events.for_entries(repo.loc, entries, head, repo.remember)
        else:
            return []
        if origin is None:
            return events
        return [
            dataclasses.replace(e, metadata={**e.metadata, "detected_by": origin}) for e in events
        ]

    def _initial_commits(self, repo: _Repo, head: Head) -> list[str]:
        """A repository first seen (no saved state, not replayed): its latest few commits."""
        initial, repo.initial = repo.initial, False
        cfg = self._config
        if not initial or head.sha is None or not cfg.initial_commits:
            return []
        assert self._runner is not None
        since = datetime.now(UTC) - timedelta(days=cfg.initial_max_age_days)
        return recent_commits(self._runner, repo.loc, head.sha, cfg.initial_commits, since)

    def _first_entries(self, repo: _Repo) -> list[ReflogEntry]:
        """Nothing (only where the repository stands), unless it was found after start and
        its reflog begins after the previous search: then it is replayed from the start."""
        since, repo.replay_after = repo.replay_after, None
        if since is not None:
            read = read_reflog(repo.loc, None, self._config.max_reflog_bytes)
            if read.position is not None and read.entries and _newer(read.entries[0], since):
                self._advance(repo, read.position)
                repo.initial = False
                return read.entries
        self._advance(repo, reflog_end(repo.loc))
        return []

    def _next_entries(self, repo: _Repo, previous: Head, head: Head) -> list[ReflogEntry]:
        read = read_reflog(repo.loc, repo.reflog, self._config.max_reflog_bytes)
        if read.rewritten:  # expired or replaced: its entries are old, compare heads
            self._advance(repo, reflog_end(repo.loc))
            return _synthesised(previous, head, repo.tips)
        self._advance(repo, read.position)
        if read.position is None:  # no reflog kept
            return _synthesised(previous, head, repo.tips)
        return read.entries

    def _advance(self, repo: _Repo, position: ReflogPosition | None) -> None:
        repo.reflog = position
        end = reflog_end(repo.loc)
        repo.more = position is not None and end is not None and position.offset < end.offset

    # --- working tree ----------------------------------------------------------------------------

    def _status_candidate(self) -> _Repo | None:
        now = self._clock.now()
        if now < self._next_status:
            return None
        due = [
            r
            for r in self._repos.values()
            if r.status_due <= now and r.head is not None and not r.failing
        ]
        return min(due, key=lambda r: r.status_due, default=None)

    def _status(self, repo: _Repo) -> list[WatcherEvent]:
        """Run ``git status`` on ``repo`` and decide whether its change set is news."""
        cfg = self._config
        now = self._clock.now()
        repo.status_due = now + cfg.worktree_interval_s
        if repo.locked:
            self._counts["deferred"] += 1
            return []
        assert self._runner is not None and self._events is not None
        started = time.perf_counter()
        status = status_summary(self._runner, repo.loc, cfg.max_files_listed)
        took = time.perf_counter() - started
        self._counts["status_runs"] += 1
        self._status_seconds += took
        self._next_status = now + took / cfg.status_cpu_budget
        if repo.status_digest is None or status.changed == 0:
            repo.status_digest = status.digest  # a baseline, or clean: nothing to tell
            return []
        if status.digest == repo.status_digest:
            return []
        last = repo.last_worktree_event
        if last is not None and now - last < cfg.worktree_min_gap_s:
            repo.status_due = last + cfg.worktree_min_gap_s
            return []
        repo.status_digest = status.digest
        repo.last_worktree_event = now
        branch = repo.head.branch if repo.head else None
        return [self._events.worktree(repo.loc, branch, status)]


def _newer(entry: ReflogEntry, since: datetime | None) -> bool:
    return since is None or (entry.at is not None and entry.at >= since.replace(microsecond=0))


def _synthesised(
    old: Head | None, new: Head, tips: dict[str, str] | None = None
) -> list[ReflogEntry]:
    """Reflog-like entries from two HEAD readings, for repositories without a reflog (or
    whose reflog was expired, for instance while the daemon was down). After a switch,
    the commits made on the new branch since its last seen tip (``tips``) come too."""
    if old is None or new.sha is None:
        return []
    if old.branch != new.branch:
        src, dst = old.branch or old.sha or "", new.branch or new.sha
        known = (tips or {}).get(new.branch) if new.branch else None
        switch = ReflogEntry(
            old.sha, known or new.sha, None, f"checkout: moving from {src} to {dst}"
        )
        if known is None or known == new.sha:
            return [switch]
        return [switch, ReflogEntry(known, new.sha, None, "update")]
    if old.sha != new.sha:
        return [ReflogEntry(old.sha, new.sha, None, "update")]
    return []
