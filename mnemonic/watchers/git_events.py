"""Turning reflog entries and status summaries into ``WatcherEvent``s (on the watcher's
worker thread: it asks git for each commit's message and changed files).

Every event carries the repository's folder as ``path`` and ``cwd`` (so a runtime exclusion
of that folder covers its git events too) and the repository's name as ``project``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mnemonic.events.types import WatcherEvent
from mnemonic.watchers.git_discovery import RepoLocation
from mnemonic.watchers.git_parse import Move, ReflogEntry, StatusSummary, display_ref
from mnemonic.watchers.git_reader import (
    GitFailed,
    GitRunner,
    Head,
    commit_info,
    diff_summary,
    new_commits,
)
from mnemonic.watchers.git_text import (
    batch_text,
    commit_text,
    diff_metadata,
    subject_and_body,
    switch_text,
    worktree_metadata,
    worktree_text,
)

if TYPE_CHECKING:
    from mnemonic.config import GitConfig

log = logging.getLogger(__name__)

WATCHER = "git"
Remember = Callable[[str], bool]  # True when a commit hash was not emitted before


def branch_labels(entries: Sequence[ReflogEntry], head: Head) -> list[str | None]:
    """The branch each entry happened on. Read backwards from the branch HEAD is on now:
    before a ``checkout: moving from a to b`` entry, the branch was ``a``."""
    branch: str | None = head.branch or head.sha
    labels: list[str | None] = []
    for entry in reversed(entries):
        labels.append(branch)
        switch = entry.switch()
        if switch is not None:
            branch = switch[0]
    return labels[::-1]


@dataclass(frozen=True, slots=True, eq=False)
class _Step:
    """One thing to tell: a switch (``sha`` None) or one new commit."""

    entry: ReflogEntry
    branch: str | None
    sha: str | None = None


class EventBuilder:
    def __init__(self, runner: GitRunner, config: GitConfig) -> None:
        self._git = runner
        self._cfg = config

    def for_entries(
        self, loc: RepoLocation, entries: Sequence[ReflogEntry], head: Head, remember: Remember
    ) -> list[WatcherEvent]:
        """Events for new reflog entries, in order. Of the new commits, only the newest
        ``max_commits_per_poll`` become commit events; the older ones become one
        ``commit_batch`` event where the first of them would have been."""
        plan: list[_Step] = []
        unlisted = 0  # commits beyond what rev-list was asked for
        for entry, branch in zip(entries, branch_labels(entries, head), strict=True):
            if entry.move is Move.SWITCH:
                plan.append(_Step(entry, branch))
            elif entry.move is Move.COMMITS and entry.new != entry.old:
                limit = self._cfg.max_commits_per_poll
                shas, total = new_commits(self._git, loc, entry.old, entry.new, limit)
                unlisted += total - len(shas)
                plan.extend(_Step(entry, branch, sha) for sha in shas if remember(sha))
        commits = [step for step in plan if step.sha is not None]
        skipped = commits[: max(0, len(commits) - self._cfg.max_commits_per_poll)]
        anchor = skipped[0] if skipped else commits[0] if unlisted and commits else None
        told_elsewhere = set(skipped)
        events: list[WatcherEvent] = []
        for step in plan:
            if step is anchor:
                last = skipped[-1].sha if skipped else step.sha
                events.append(self._batch(loc, step, len(skipped) + unlisted, last))
            if step.sha is None:
                events.extend(self._switch(loc, step.entry))
            elif step not in told_elsewhere:
                events.extend(self._commit_or_nothing(loc, step.sha, step.branch))
        return events

    def commits(
        self, loc: RepoLocation, shas: Sequence[str], branch: str | None, remember: Remember
    ) -> list[WatcherEvent]:
        """One event per commit of ``shas`` (already bounded by the caller), in order."""
        events: list[WatcherEvent] = []
        for sha in shas:
            if remember(sha):
                events.extend(self._commit_or_nothing(loc, sha, branch))
        return events

    def _commit_or_nothing(
        self, loc: RepoLocation, sha: str, branch: str | None
    ) -> list[WatcherEvent]:
        """One commit's event; a commit git cannot describe (pruned, corrupt) is skipped
        with a warning rather than costing the rest of the poll its events."""
        try:
            return [self._commit(loc, sha, branch)]
        except GitFailed as exc:
            log.warning("git watcher: commit %s in %s skipped: %s", sha[:7], loc.worktree, exc)
            return []

    def _batch(self, loc: RepoLocation, first: _Step, count: int, last: str | None) -> WatcherEvent:
        """One event for ``count`` commits not told one by one, up to ``last``."""
        start = first.entry.old or "root"
        text = batch_text(loc.project, first.branch, count, start, last or first.entry.new)
        meta = {"count": count, "from_commit": first.entry.old, "to_commit": last}
        return self._event(loc, "commit_batch", text, meta, first.entry.at)

    @staticmethod
    def _event(
        loc: RepoLocation,
        kind: str,
        content: str,
        metadata: dict[str, Any],
        occurred_at: datetime | None = None,
    ) -> WatcherEvent:
        return WatcherEvent(
            watcher=WATCHER,
            kind=kind,
            content=content,
            path=str(loc.worktree),
            cwd=str(loc.worktree),
            project=loc.project,
            occurred_at=occurred_at,
            metadata={"repo": str(loc.worktree), **metadata},
        )

    def _commit(self, loc: RepoLocation, sha: str, branch: str | None) -> WatcherEvent:
        cfg = self._cfg
        info = commit_info(self._git, loc, sha)
        parent = info.parents[0] if info.parents else None
        diff = diff_summary(
            self._git,
            loc,
            parent,
            info.sha,
            max_examples=cfg.max_files_listed,
            max_line_count_files=cfg.max_line_count_files,
        )
        content = commit_text(
            info,
            branch,
            loc.project,
            diff,
            max_files=cfg.max_files_listed,
            max_body_chars=cfg.max_message_chars,
        )
        meta = {
            "hash": info.sha,
            "branch": display_ref(branch),
            "author": info.author,
            "authored_at": info.authored_at,
            "parents": list(info.parents),
            "subject": subject_and_body(info.message, 0)[0],
            **diff_metadata(diff, cfg.max_files_listed),
        }
        return self._event(loc, "commit", content, meta, info.committed_at)

    def _switch(self, loc: RepoLocation, entry: ReflogEntry) -> list[WatcherEvent]:
        names = entry.switch()
        if names is None or (names[0] == names[1] and entry.old == entry.new):
            return []
        src, dst = names
        diff = None
        if entry.old is not None and entry.old != entry.new:
            try:
                diff = diff_summary(
                    self._git,
                    loc,
                    entry.old,
                    entry.new,
                    max_examples=self._cfg.max_files_listed,
                    max_line_count_files=self._cfg.max_line_count_files,
                )
            except GitFailed as exc:  # a pruned commit: still tell of the switch itself
                log.warning("git watcher: diff of a switch in %s failed: %s", loc.worktree, exc)
        content = switch_text(loc.project, src, dst, diff, max_files=self._cfg.max_files_listed)
        meta: dict[str, Any] = {
            "from": display_ref(src),
            "to": display_ref(dst),
            "from_commit": entry.old,
            "to_commit": entry.new,
        }
        if diff is not None:
            meta.update(diff_metadata(diff, self._cfg.max_files_listed))
        return [self._event(loc, "branch_switch", content, meta, entry.at)]

    def worktree(
        self, loc: RepoLocation, branch: str | None, status: StatusSummary
    ) -> WatcherEvent:
        content = worktree_text(loc.project, branch, status, max_files=self._cfg.max_files_listed)
        meta = {
            "branch": display_ref(branch),
            **worktree_metadata(status, self._cfg.max_files_listed),
        }
        return self._event(loc, "worktree_changed", content, meta)
