"""The git watcher against real repositories made with the ``git`` binary in temporary
folders: commits, branch switches, working-tree changes, index.lock deferral, a 50,000-file
commit, discovery, and a machine without git. The parsing and wording rules have table tests.

Time for scheduling is a ``FakeClock`` moved by the test; git itself runs for real.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mnemonic.config import GitConfig
from mnemonic.events.types import Event, WatcherEvent
from mnemonic.runtime.clock import FakeClock
from mnemonic.watchers.git import GitWatcher
from mnemonic.watchers.git_discovery import DiscoveryLimits, find_worktrees, locate
from mnemonic.watchers.git_events import branch_labels
from mnemonic.watchers.git_parse import (
    EMPTY_STATUS_DIGEST,
    Move,
    NameStatusParser,
    NumstatParser,
    PathTally,
    ReflogEntry,
    StatusParser,
    classify,
    display_ref,
    folder_key,
    parse_reflog_line,
    split_complete_lines,
)
from mnemonic.watchers.git_reader import CommitInfo, Head
from mnemonic.watchers.git_text import commit_text, switch_text, worktree_text

HAS_GIT = shutil.which("git") is not None
needs_git = pytest.mark.skipif(not HAS_GIT, reason="needs the git binary")
A = "a" * 40
B = "b" * 40

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Ann Author",
    "GIT_AUTHOR_EMAIL": "ann@example.com",
    "GIT_COMMITTER_NAME": "Ann Author",
    "GIT_COMMITTER_EMAIL": "ann@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=cwd,
        env=GIT_ENV,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def make_repo(parent: Path, name: str = "webapp") -> Path:
    repo = parent / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "README.md").write_text("# webapp\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-qm", "Initial commit")
    return repo


def commit_file(repo: Path, path: str, text: str, message: str) -> str:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    git(repo, "add", path)
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


class Harness:
    """A watcher on ``root`` with a fake clock; ``poll`` moves time and returns new events."""

    def __init__(self, root: Path, state_path: Path | None = None, **config: Any) -> None:
        settings = {"roots": [str(root)], "worktree_min_gap_s": 0, "initial_commits": 0}
        self.clock = FakeClock()
        self.watcher = GitWatcher(
            GitConfig(**(settings | config)), clock=self.clock, state_path=state_path
        )
        self.events: list[Event] = []

    async def start(self) -> None:
        assert await self.watcher.start()
        assert await self.poll() == []  # the first look only records where things stand

    async def poll(self, advance: float = 1000.0) -> list[WatcherEvent]:
        await self.clock.advance(advance)
        seen = len(self.events)
        await self.watcher.poll_once(self.events.append)
        new = self.events[seen:]
        assert all(isinstance(e, WatcherEvent) for e in new)
        return [e for e in new if isinstance(e, WatcherEvent)]


def kinds(events: list[WatcherEvent]) -> list[str]:
    return [e.kind for e in events]


# --- pure rules ------------------------------------------------------------------------------

REFLOG_CASES = [
    (
        f"{'0' * 40} {A} Ann <a@x> 1700000000 +0100\tcommit (initial): first",
        ReflogEntry(
            None, A, datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC), "commit (initial): first"
        ),
    ),
    (
        f"{A} {B} Ann Author <a@x> 1700000000 -0530\tcheckout: moving from main to feat",
        ReflogEntry(
            A,
            B,
            datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC),
            "checkout: moving from main to feat",
        ),
    ),
    (
        f"{A} {B} Ann <a@x> 1700000000 +0000",
        ReflogEntry(A, B, datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC), ""),
    ),
    ("garbage line", None),
    (f"{A} {B} Ann <a@x> notatime +0000\tcommit: x", None),
]


@pytest.mark.parametrize(("line", "expected"), REFLOG_CASES)
def test_parse_reflog_line(line: str, expected: ReflogEntry | None) -> None:
    assert parse_reflog_line(line) == expected


@pytest.mark.parametrize(
    ("message", "move"),
    [
        ("commit: Fix it", Move.COMMITS),
        ("commit (initial): first", Move.COMMITS),
        ("commit (amend): better words", Move.COMMITS),
        ("merge feat: Fast-forward", Move.COMMITS),
        ("pull: Fast-forward", Move.COMMITS),
        ("reset: moving to HEAD~1", Move.COMMITS),
        ("rebase (pick): Add thing", Move.COMMITS),
        ("cherry-pick: Add thing", Move.COMMITS),
        ("checkout: moving from main to feat", Move.SWITCH),
        ("rebase (start): checkout main", Move.JUMP),
        ("pull --rebase (start): checkout origin/main", Move.JUMP),
        ("clone: from https://example.com/x.git", Move.JUMP),
        ("", Move.COMMITS),
    ],
)
def test_classify(message: str, move: Move) -> None:
    assert classify(message) is move


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("main", "main"),
        ("refs/heads/feat/x", "feat/x"),
        (A, "detached at aaaaaaa"),
        (None, "detached HEAD"),
        ("feat~0", "feat~0"),
    ],
)
def test_display_ref(name: str | None, shown: str) -> None:
    assert display_ref(name) == shown


def test_split_complete_lines_leaves_a_torn_line() -> None:
    assert split_complete_lines(b"one\ntwo\nthr") == (["one", "two"], 8)
    assert split_complete_lines(b"partial") == ([], 0)


@pytest.mark.parametrize(
    ("path", "key"),
    [("a.py", "."), ("src/a.py", "src"), ("src/app/a.py", "src/app"), ("a/b/c/d.py", "a/b")],
)
def test_folder_key(path: str, key: str) -> None:
    assert folder_key(path) == key


def test_top_folders_go_one_level_deeper_when_one_folder_holds_everything() -> None:
    tally = PathTally(max_examples=3)
    for i in range(30):
        tally.add(f"vendor/lib{i % 3}/f{i}.c")
    assert tally.top_folders() == [("vendor/lib0/", 10), ("vendor/lib1/", 10), ("vendor/lib2/", 10)]
    assert tally.examples == ["vendor/lib0/f0.c", "vendor/lib1/f1.c", "vendor/lib2/f2.c"]
    mixed = PathTally(max_examples=1)
    for path in ("src/a/x.py", "src/b/y.py", "docs/z.md", "top.txt"):
        mixed.add(path)
    assert mixed.top_folders() == [("src/", 2), ("docs/", 1), (".", 1)]


def test_parsers_survive_records_split_across_chunks() -> None:
    names = b"A\0new file.txt\0M\0src/a.py\0D\0old.c\0"
    parser = NameStatusParser(max_examples=10)
    for i in range(len(names)):  # one byte at a time
        parser.write(names[i : i + 1])
    s = parser.summary
    assert (s.added, s.modified, s.deleted, s.files) == (1, 1, 1, 3)
    assert s.tally.examples == ["new file.txt", "src/a.py", "old.c"]
    numstat = NumstatParser()
    numstat.write(b"3\t1\ta.py\0-\t-\tlogo.png\0")
    numstat.write(b"10\t0\tb.py\0")
    assert (numstat.insertions, numstat.deletions, numstat.binary) == (13, 1, 1)


def test_status_parser_counts_and_digests_paths_only() -> None:
    parser = StatusParser(max_examples=2)
    parser.write(b" M src/a.py\0A  b.py\0 D c.py\0?? notes/\0UU d.py\0")
    s = parser.summary
    assert (s.modified, s.added, s.deleted, s.untracked, s.conflicted) == (1, 1, 1, 1, 1)
    assert s.changed == 5 and s.tally.examples == ["src/a.py", "b.py"]
    again = StatusParser(max_examples=2)
    again.write(b"MM src/a.py\0A  b.py\0 D c.py\0?? notes/\0UU d.py\0")  # same paths
    assert again.summary.digest == s.digest
    assert StatusParser(2).summary.digest == EMPTY_STATUS_DIGEST != s.digest


def test_branch_labels_read_backwards_from_the_current_branch() -> None:
    entries = [
        ReflogEntry(A, B, None, "commit: one"),
        ReflogEntry(B, B, None, "checkout: moving from main to feat"),
        ReflogEntry(B, A, None, "commit: two"),
        ReflogEntry(A, A, None, f"checkout: moving from feat to {A}"),
    ]
    assert branch_labels(entries, Head(None, A)) == ["main", "feat", "feat", A]


def test_commit_and_switch_wording() -> None:
    info = CommitInfo(
        A,
        (B,),
        "Ann",
        None,
        None,
        "Fix race in cache eviction\n\nThe lock was released before the entry was removed.",
    )
    small = NameStatusParser(20)
    small.write(b"M\0src/cache.py\0M\0src/lru.py\0A\0tests/test_cache.py\0")
    small.summary.insertions, small.summary.deletions, small.summary.lines_counted = 40, 12, True
    assert commit_text(info, "main", "webapp", small.summary, max_files=20, max_body_chars=500) == (
        "commit aaaaaaa on main in webapp by Ann: Fix race in cache eviction (3 files, +40 -12): "
        "src/cache.py, src/lru.py, tests/test_cache.py\n\n"
        "The lock was released before the entry was removed."
    )
    big = NameStatusParser(20)
    big.write(b"".join(b"A\0vendor/lib/f%d.c\0" % i for i in range(300)))
    big.write(b"".join(b"A\0data/f%d.csv\0" % i for i in range(100)))
    text = commit_text(info, "main", "webapp", big.summary, max_files=20, max_body_chars=0)
    assert text == (
        "commit aaaaaaa on main in webapp by Ann: Fix race in cache eviction "
        "(400 files; 400 added) in vendor/ (300), data/ (100)"
    )
    assert switch_text("webapp", "main", "feat", big.summary, max_files=20) == (
        "switched webapp from main to feat (400 files differ; 400 added) in vendor/ (300), "
        "data/ (100)"
    )
    assert switch_text("webapp", "main", A, None, max_files=20) == (
        "switched webapp from main to detached at aaaaaaa"
    )
    status = StatusParser(3)
    status.write(b" M a.py\0?? b.py\0")
    assert worktree_text("webapp", "main", status.summary, max_files=20) == (
        "uncommitted changes in webapp on main: 1 modified, 1 untracked: a.py, b.py"
    )


# --- discovery ------------------------------------------------------------------------------------


@needs_git
def test_discovery_is_bounded_and_skips_noise(tmp_path: Path) -> None:
    root = tmp_path / "code"
    make_repo(root, "top")
    make_repo(root / "org" / "team", "deep")  # depth 3
    make_repo(root / "a" / "b" / "c", "too-deep")  # depth 4
    make_repo(root / "node_modules", "dep")
    make_repo(root / ".hidden", "secret")
    make_repo(root / "top" / "vendor", "nested")  # a repository inside a repository
    (root / "loop").symlink_to(root)  # never followed
    found, truncated = find_worktrees([root], DiscoveryLimits(max_depth=3))
    names = sorted(p.name for p in found)
    assert names == ["deep", "nested", "top"] and not truncated
    few, cut = find_worktrees([root], DiscoveryLimits(max_depth=3, max_repos=1))
    assert len(few) == 1 and cut


@needs_git
def test_a_linked_worktree_counts_and_belongs_to_its_main_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")
    git(repo, "worktree", "add", "-q", str(tmp_path / "code" / "webapp-fix"))
    found, _ = find_worktrees([tmp_path / "code"], DiscoveryLimits())
    locations = {p.name: locate(p) for p in found}
    fix = locations["webapp-fix"]
    assert fix is not None and (tmp_path / "code" / "webapp-fix" / ".git").is_file()
    assert fix.git_dir.parent.name == "worktrees" and fix.common_dir == repo / ".git"
    assert fix.project == "webapp"
    main = locations["webapp"]
    assert main is not None and main.project == "webapp" and main.git_dir == main.common_dir


# --- the watcher on real repositories ------------------------------------------------------------


@needs_git
def test_commits_become_events_in_order(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")

    async def main() -> list[WatcherEvent]:
        h = Harness(tmp_path / "code")
        await h.start()
        commit_file(repo, "src/cache.py", "a = 1\nb = 2\n", "Fix race in cache eviction")
        (repo / "src" / "cache.py").write_text("a = 1\n")
        (repo / "src" / "lru.py").write_text("x = 3\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "Split the LRU out\n\nbecause the cache module grew too big")
        return await h.poll()

    events = asyncio.run(main())
    assert kinds(events) == ["commit", "commit"]
    first, second = events
    head = git(repo, "rev-parse", "HEAD").strip()
    assert second.metadata["hash"] == head
    assert first.content.startswith("commit ") and "Fix race in cache eviction" in first.content
    assert second.content == (
        f"commit {head[:7]} on main in webapp by Ann Author: Split the LRU out "
        "(2 files, +1 -1): src/cache.py, src/lru.py\n\nbecause the cache module grew too big"
    )
    meta = second.metadata
    assert meta["branch"] == "main" and meta["author"] == "Ann Author"
    assert (meta["files_total"], meta["insertions"], meta["deletions"]) == (2, 1, 1)
    assert meta["files"] == ["src/cache.py", "src/lru.py"] and not meta["summarised"]
    assert second.project == "webapp" and second.path == str(repo.resolve())
    assert second.watcher == "git" and second.occurred_at is not None


@needs_git
def test_a_burst_of_commits_is_bounded_per_poll(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")

    async def main() -> list[WatcherEvent]:
        h = Harness(tmp_path / "code", max_commits_per_poll=3)
        await h.start()
        for i in range(8):
            commit_file(repo, f"f{i}.txt", f"{i}\n", f"Change {i}")
        return await h.poll()

    events = asyncio.run(main())
    assert kinds(events) == ["commit_batch", "commit", "commit", "commit"]
    assert events[0].metadata["count"] == 5
    assert "5 earlier commits arrived on main in webapp" in events[0].content
    assert [e.metadata["subject"] for e in events[1:]] == ["Change 5", "Change 6", "Change 7"]


@needs_git
def test_a_pull_of_many_commits_is_one_batch_and_the_newest(tmp_path: Path) -> None:
    upstream = make_repo(tmp_path / "elsewhere")
    (tmp_path / "code").mkdir()
    git(tmp_path / "code", "clone", "-q", str(upstream), "webapp")
    clone = tmp_path / "code" / "webapp"

    async def main() -> list[WatcherEvent]:
        h = Harness(tmp_path / "code", max_commits_per_poll=3)
        await h.start()
        for i in range(8):
            commit_file(upstream, f"f{i}.txt", f"{i}\n", f"Upstream change {i}")
        git(clone, "pull", "-q", "--ff-only")
        return await h.poll()

    events = asyncio.run(main())
    assert (clone / ".git" / "logs" / "HEAD").read_text().count("\n") == 2  # clone, pull
    assert kinds(events) == ["commit_batch", "commit", "commit", "commit"]
    assert events[0].metadata["count"] == 5
    assert [e.metadata["subject"] for e in events[1:]] == [
        "Upstream change 5",
        "Upstream change 6",
        "Upstream change 7",
    ]


@needs_git
def test_branch_switch_and_a_commit_just_before_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")

    async def main() -> tuple[list[WatcherEvent], list[WatcherEvent]]:
        h = Harness(tmp_path / "code")
        await h.start()
        git(repo, "switch", "-qc", "feature/login")
        switched = await h.poll()
        commit_file(repo, "login.py", "def login(): ...\n", "Add login form")
        git(repo, "switch", "-q", "main")  # within the same poll interval
        return switched, await h.poll()

    switched, later = asyncio.run(main())
    assert kinds(switched) == ["branch_switch"]
    assert switched[0].metadata["from"] == "main" and switched[0].metadata["to"] == "feature/login"
    assert switched[0].content == "switched webapp from main to feature/login"
    assert kinds(later) == ["commit", "branch_switch"]
    assert later[0].metadata["branch"] == "feature/login"  # the branch it was made on
    assert later[1].content == (
        "switched webapp from feature/login to main (1 file differ, +0 -1): login.py"
    )


@needs_git
def test_a_commit_seen_twice_is_emitted_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")

    async def main() -> list[list[WatcherEvent]]:
        h = Harness(tmp_path / "code")
        await h.start()
        commit_file(repo, "a.txt", "a\n", "Add a")
        rounds = [await h.poll()]
        git(repo, "reset", "-q", "--hard", "HEAD~1")
        rounds.append(await h.poll())
        git(repo, "reset", "-q", "--hard", "ORIG_HEAD")
        rounds.append(await h.poll())
        git(repo, "commit", "-q", "--amend", "-m", "Add a, reworded")
        rounds.append(await h.poll())
        return rounds

    rounds = asyncio.run(main())
    assert [kinds(r) for r in rounds] == [["commit"], [], [], ["commit"]]
    assert rounds[3][0].metadata["subject"] == "Add a, reworded"


@needs_git
def test_index_lock_defers_the_poll(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")

    async def main() -> tuple[list[WatcherEvent], list[WatcherEvent], dict[str, Any]]:
        h = Harness(tmp_path / "code")
        await h.start()
        commit_file(repo, "a.txt", "a\n", "Add a")
        lock = repo / ".git" / "index.lock"
        lock.write_text("")
        during = await h.poll() + await h.poll()
        detail = h.watcher.health().detail
        lock.unlink()
        return during, await h.poll(), detail

    during, after, detail = asyncio.run(main())
    assert during == [] and detail["deferred"] >= 2
    assert kinds(after) == ["commit"]


@needs_git
def test_working_tree_changes_only_when_the_set_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")

    async def main() -> list[list[WatcherEvent]]:
        h = Harness(tmp_path / "code", worktree_interval_s=1)
        await h.start()
        rounds = []
        (repo / "README.md").write_text("# webapp\nmore\n")
        rounds.append(await h.poll())
        (repo / "README.md").write_text("# webapp\nmore and more\n")  # same set of paths
        rounds.append(await h.poll())
        (repo / "notes.md").write_text("todo\n")
        rounds.append(await h.poll())
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "Notes")  # clean again: the commit says it all
        rounds.append(await h.poll())
        return rounds

    rounds = asyncio.run(main())
    assert [kinds(r) for r in rounds] == [
        ["worktree_changed"],
        [],
        ["worktree_changed"],
        ["commit"],
    ]
    assert rounds[0][0].content == "uncommitted changes in webapp on main: 1 modified: README.md"
    assert rounds[2][0].metadata["untracked"] == 1 and rounds[2][0].metadata["modified"] == 1


@needs_git
def test_working_tree_events_are_rate_limited(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")

    async def main() -> list[list[WatcherEvent]]:
        h = Harness(tmp_path / "code", worktree_interval_s=1, worktree_min_gap_s=300)
        await h.start()
        (repo / "a.txt").write_text("a\n")
        rounds = [await h.poll(10)]
        (repo / "b.txt").write_text("b\n")
        rounds.append(await h.poll(10))
        rounds.append(await h.poll(100))
        rounds.append(await h.poll(200))  # 310 s after the first event
        return rounds

    rounds = asyncio.run(main())
    assert [kinds(r) for r in rounds] == [["worktree_changed"], [], [], ["worktree_changed"]]
    assert rounds[3][0].metadata["files"] == ["a.txt", "b.txt"]


@needs_git
def test_status_never_rewrites_the_index(tmp_path: Path) -> None:
    """A plain ``git status`` refreshes a stale index by taking index.lock and rewriting it;
    the watcher's must not, or a user's ``git commit`` could fail on the lock."""
    repo = make_repo(tmp_path / "code")
    readme = repo / "README.md"
    os.utime(readme, (time.time() + 5, time.time() + 5))  # stale stat info, same content
    index = repo / ".git" / "index"
    before = index.stat().st_mtime_ns

    async def main() -> int:
        h = Harness(tmp_path / "code", worktree_interval_s=1)
        await h.start()
        await h.poll()
        return int(h.watcher.health().detail["status_runs"])

    assert asyncio.run(main()) >= 1
    assert index.stat().st_mtime_ns == before


@needs_git
def test_a_repository_without_a_reflog_is_compared_head_to_head(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")
    git(repo, "config", "core.logAllRefUpdates", "false")
    shutil.rmtree(repo / ".git" / "logs")

    async def main() -> list[WatcherEvent]:
        h = Harness(tmp_path / "code")
        await h.start()
        commit_file(repo, "a.txt", "a\n", "Add a")
        events = await h.poll()
        git(repo, "switch", "-qc", "other")
        return events + await h.poll()

    events = asyncio.run(main())
    assert not (repo / ".git" / "logs" / "HEAD").exists()
    assert kinds(events) == ["commit", "branch_switch"]
    assert events[1].metadata["from"] == "main" and events[1].metadata["to"] == "other"


@needs_git
def test_a_repository_created_after_start_is_replayed(tmp_path: Path) -> None:
    root = tmp_path / "code"
    make_repo(root, "old")

    async def main() -> tuple[list[WatcherEvent], list[Path]]:
        h = Harness(root, rediscover_interval_s=60)
        await h.start()
        make_repo(root, "fresh")
        commit_file(root / "fresh", "a.txt", "a\n", "Second commit")
        events = await h.poll(100)  # rediscovers, then takes a first look
        return events, h.watcher.repositories

    events, repos = asyncio.run(main())
    assert [p.name for p in repos] == ["fresh", "old"]
    assert [e.metadata["subject"] for e in events] == ["Initial commit", "Second commit"]


@needs_git
def test_an_unreadable_repository_warns_once_and_recovers(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")
    head = (repo / ".git" / "HEAD").read_text()

    async def main() -> tuple[list[WatcherEvent], int, list[WatcherEvent]]:
        h = Harness(tmp_path / "code")
        await h.start()
        (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\nbroken\x00\n")
        broken = await h.poll() + await h.poll()
        warnings = h.watcher.health().warnings
        (repo / ".git" / "HEAD").write_text(head)
        commit_file(repo, "a.txt", "a\n", "Add a")
        return broken, warnings, await h.poll()

    broken, warnings, after = asyncio.run(main())
    assert broken == [] and warnings == 1
    assert kinds(after) == ["commit"]


@needs_git
def test_a_commit_git_cannot_describe_is_skipped(tmp_path: Path) -> None:
    """Its parent's object is gone (a broken clone, a manual prune): the watcher warns and
    goes on with the next commit instead of failing the repository."""
    repo = make_repo(tmp_path / "code")

    async def main() -> tuple[list[WatcherEvent], list[WatcherEvent]]:
        h = Harness(tmp_path / "code")
        await h.start()
        middle = commit_file(repo, "a.txt", "a\n", "Middle")
        commit_file(repo, "b.txt", "b\n", "Top")
        (repo / ".git" / "objects" / middle[:2] / middle[2:]).unlink()
        broken = await h.poll()
        (repo / "c.txt").write_text("c\n")
        git(repo, "add", "c.txt")
        git(repo, "commit", "-qm", "Later")
        return broken, await h.poll()

    broken, later = asyncio.run(main())
    assert broken == []
    assert [e.metadata["subject"] for e in later] == ["Later"]


@pytest.fixture
def fast_tmp(tmp_path: Path) -> Iterator[Path]:
    """A temporary folder on tmpfs when there is one: creating 50,000 files on this
    machine's ext4 takes ~30 s of kernel time, on tmpfs ~2 s."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        folder = Path(tempfile.mkdtemp(prefix="mnemonic-git-", dir=shm))
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    else:
        yield tmp_path


@needs_git
@pytest.mark.slow
def test_fifty_thousand_files_become_one_summarised_event(fast_tmp: Path) -> None:
    repo = make_repo(fast_tmp / "code")
    timings: dict[str, float] = {}

    async def main() -> list[list[WatcherEvent]]:
        h = Harness(fast_tmp / "code", worktree_interval_s=1, command_timeout_s=100)
        await h.start()
        rounds = []
        t0 = time.perf_counter()
        for d in range(50):
            folder = repo / ("data" if d < 30 else "vendor") / f"part{d:02d}"
            folder.mkdir(parents=True)
            for i in range(1000):
                fd = os.open(folder / f"f{i}.txt", os.O_WRONLY | os.O_CREAT, 0o644)
                os.write(fd, b"x\n")
                os.close(fd)
        timings["write 50,000 files"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        git(repo, "add", "-A")
        timings["git add -A"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        rounds.append(await h.poll())  # staged: one worktree event
        timings["poll (status of 50,000)"] = time.perf_counter() - t0
        git(repo, "commit", "-qm", "Import the data set")
        t0 = time.perf_counter()
        rounds.append(await h.poll())  # the commit
        timings["poll (commit of 50,000)"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        git(repo, "checkout", "-q", "HEAD~1")
        timings["git checkout (removes 50,000)"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        rounds.append(await h.poll())  # the checkout
        timings["poll (checkout of 50,000)"] = time.perf_counter() - t0
        return rounds

    staged, committed, checkout = asyncio.run(main())
    print("\n" + "\n".join(f"{k}: {v:.2f} s" for k, v in timings.items()))
    assert kinds(staged) == ["worktree_changed"]
    assert staged[0].metadata["added"] == 50_000 and staged[0].metadata["summarised"]
    assert kinds(committed) == ["commit"]
    meta = committed[0].metadata
    assert meta["files_total"] == 50_000 and meta["files_added"] == 50_000
    assert meta["summarised"] and len(meta["files"]) == 20 and "insertions" not in meta
    assert meta["top_folders"] == [["data/", 30_000], ["vendor/", 20_000]]
    assert (
        "(50,000 files; 50,000 added) in data/ (30,000), vendor/ (20,000)" in committed[0].content
    )
    assert len(committed[0].content) < 500
    assert kinds(checkout) == ["branch_switch"]
    assert checkout[0].metadata["files_deleted"] == 50_000
    assert "50,000 files differ" in checkout[0].content


# --- lifecycle ------------------------------------------------------------------------------------


@needs_git
def test_run_emits_while_running_and_stops_promptly(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")

    async def main() -> tuple[list[Event], float, str]:
        events: list[Event] = []
        watcher = GitWatcher(GitConfig(roots=[str(tmp_path / "code")], poll_interval_s=0.05))
        task = asyncio.create_task(watcher.run(events.append), name="mnemonic:agent:git")
        for _ in range(200):
            if watcher.health().state == "running":
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)  # a first look
        await asyncio.to_thread(commit_file, repo, "a.txt", "a\n", "Add a while running")
        for _ in range(200):
            if events:
                break
            await asyncio.sleep(0.05)
        started = time.perf_counter()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return events, time.perf_counter() - started, watcher.health().state

    events, stop_s, state = asyncio.run(main())
    assert [e.kind for e in events if isinstance(e, WatcherEvent)] == ["commit"]
    assert stop_s < 1.0 and state == "stopped"


def test_a_missing_git_binary_disables_the_watcher(tmp_path: Path) -> None:
    watcher = GitWatcher(GitConfig(roots=[str(tmp_path)], git_binary=str(tmp_path / "no-git")))
    events: list[Event] = []
    asyncio.run(watcher.run(events.append))  # returns instead of raising or looping
    health = watcher.health()
    assert health.state == "disabled" and events == []
    assert health.message is not None and "no git binary" in health.message
    assert "git.git_binary" in health.message


def test_no_git_on_path_in_a_fresh_process(tmp_path: Path) -> None:
    """GitPython is imported for the first time in a process whose PATH has no git."""
    empty = tmp_path / "bin"
    empty.mkdir()
    script = (
        "import asyncio, json\n"
        "from mnemonic.config import GitConfig\nfrom mnemonic.watchers.git import GitWatcher\n"
        f"w = GitWatcher(GitConfig(roots=[{str(tmp_path)!r}]))\n"
        "asyncio.run(w.run(print))\n"
        "h = w.health()\n"
        "print(json.dumps({'state': h.state, 'message': h.message}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_PYTHON")}
    env["PATH"] = str(empty)
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["state"] == "disabled" and "no git binary" in report["message"]


# --- what happened while the daemon was down, and repositories new to the watcher ---------------


@needs_git
def test_commits_made_while_stopped_are_caught_up_at_start(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")
    state = tmp_path / "data" / "git-state.json"

    async def main() -> tuple[list[WatcherEvent], list[WatcherEvent]]:
        first = Harness(tmp_path / "code", state_path=state)
        await first.start()
        commit_file(repo, "a.txt", "a\n", "Add a while running")
        live = await first.poll()
        # the daemon stops; meanwhile: two commits, a switch, one more commit
        commit_file(repo, "b.txt", "b\n", "Add b while stopped")
        git(repo, "switch", "-qc", "fix")
        commit_file(repo, "c.txt", "c\n", "Add c on fix while stopped")
        second = Harness(tmp_path / "code", state_path=state)
        assert await second.watcher.start()
        caught = await second.poll()
        assert await second.poll() == []  # told once
        return live, caught

    live, caught = asyncio.run(main())
    assert [e.metadata["subject"] for e in live] == ["Add a while running"]
    assert kinds(caught) == ["commit", "branch_switch", "commit"]
    assert [e.metadata.get("subject") for e in caught] == [
        "Add b while stopped",
        None,
        "Add c on fix while stopped",
    ]
    assert caught[0].metadata["branch"] == "main" and caught[2].metadata["branch"] == "fix"
    assert {e.metadata["detected_by"] for e in caught} == {"catch_up"}
    assert oct(state.stat().st_mode & 0o777) == "0o600"
    saved = json.loads(state.read_text())["repos"][str(repo.resolve())]
    assert saved["branch"] == "fix" and set(saved["branches"]) == {"main", "fix"}


@needs_git
def test_catch_up_is_bounded_and_summarised(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "code")
    state = tmp_path / "git-state.json"

    async def main() -> list[WatcherEvent]:
        first = Harness(tmp_path / "code", state_path=state)
        await first.start()
        commit_file(repo, "x.txt", "x\n", "Seen live")
        await first.poll()
        for i in range(30):
            commit_file(repo, f"f{i}.txt", f"{i}\n", f"Offline change {i}")
        second = Harness(tmp_path / "code", state_path=state, max_commits_per_poll=4)
        assert await second.watcher.start()
        return await second.poll()

    events = asyncio.run(main())
    assert kinds(events) == ["commit_batch"] + ["commit"] * 4
    assert events[0].metadata["count"] == 26
    assert [e.metadata["subject"] for e in events[1:]] == [
        f"Offline change {i}" for i in range(26, 30)
    ]


@needs_git
def test_catch_up_after_the_reflog_was_expired_uses_the_saved_branch_tips(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "code")
    state = tmp_path / "git-state.json"

    async def main() -> list[WatcherEvent]:
        first = Harness(tmp_path / "code", state_path=state)
        await first.start()
        git(repo, "switch", "-qc", "topic")
        commit_file(repo, "t.txt", "t\n", "Topic work")
        git(repo, "switch", "-q", "main")
        await first.poll()
        git(repo, "switch", "-q", "topic")
        commit_file(repo, "u.txt", "u\n", "More topic work while stopped")
        commit_file(repo, "v.txt", "v\n", "And more")
        (repo / ".git" / "logs" / "HEAD").unlink()  # expired: no reflog to resume from
        second = Harness(tmp_path / "code", state_path=state)
        assert await second.watcher.start()
        return await second.poll()

    events = asyncio.run(main())
    assert kinds(events) == ["branch_switch", "commit", "commit"]
    assert [e.metadata.get("subject") for e in events[1:]] == [
        "More topic work while stopped",
        "And more",
    ]


@needs_git
def test_first_sight_imports_only_a_few_recent_commits(tmp_path: Path) -> None:
    root = tmp_path / "code"
    repo = make_repo(root)
    old = {"GIT_AUTHOR_DATE": "2001-01-01T00:00:00", "GIT_COMMITTER_DATE": "2001-01-01T00:00:00"}
    stale = make_repo(root, "stale")
    for i in range(3):
        (stale / f"s{i}").write_text("s")
        git(stale, "add", ".")
        subprocess.run(
            ["git", "commit", "-qm", f"Old {i}"], cwd=stale, env=GIT_ENV | old, check=True
        )
    for i in range(5):
        commit_file(repo, f"f{i}.txt", f"{i}\n", f"Recent {i}")

    async def main() -> list[WatcherEvent]:
        h = Harness(root, state_path=tmp_path / "state.json", initial_commits=2)
        assert await h.watcher.start()
        first = await h.poll()
        assert await h.poll() == []
        return first

    events = asyncio.run(main())
    assert [e.metadata["subject"] for e in events] == ["Recent 3", "Recent 4"]
    assert {e.metadata["detected_by"] for e in events} == {"first_sight"}


@needs_git
def test_a_new_repository_is_found_between_full_searches(tmp_path: Path) -> None:
    root = tmp_path / "code"
    make_repo(root, "old")

    async def main() -> tuple[list[WatcherEvent], dict[str, Any]]:
        h = Harness(root, rediscover_interval_s=1e9)
        await h.start()
        (root / "group").mkdir()
        await h.poll(2)  # notices the new folder
        make_repo(root / "group", "fresh")
        commit_file(root / "group" / "fresh", "a.txt", "a\n", "Second commit")
        events = await h.poll(2)
        return events, h.watcher.health().detail

    events, detail = asyncio.run(main())
    assert [e.metadata["subject"] for e in events] == ["Initial commit", "Second commit"]
    assert detail["repositories"] == 2 and detail["found_between_searches"] == 1


@needs_git
def test_a_hint_from_another_watcher_finds_a_repository_at_once(tmp_path: Path) -> None:
    root = tmp_path / "code"
    make_repo(root, "old")

    async def main() -> tuple[list[WatcherEvent], list[Path]]:
        h = Harness(root, rediscover_interval_s=1e9, new_repo_checks_per_poll=0)
        await h.start()
        fresh = make_repo(root, "fresh")
        assert await h.poll(2) == []  # no stat polling, no search: not seen yet
        h.watcher.hint(str(root / "outside-depth" / "a" / "b" / "c" / "d"))  # ignored
        h.watcher.hint(str(fresh))
        return await h.poll(2), h.watcher.repositories

    events, repos = asyncio.run(main())
    assert [p.name for p in repos] == ["fresh", "old"]
    assert [e.metadata["subject"] for e in events] == ["Initial commit"]


def test_git_state_file_survives_garbage(tmp_path: Path) -> None:
    from mnemonic.watchers.git_reader import ReflogPosition
    from mnemonic.watchers.git_state import RepoState, load_states, save_states

    path = tmp_path / "state.json"
    assert load_states(path).saved_at is None
    path.write_text("{not json")
    assert load_states(path).repos == {}
    state = RepoState(Head("main", A), ReflogPosition(5, 99), {"main": A, "x": B})
    save_states(path, {"/r": state, "/bad": state}, datetime(2024, 1, 2, tzinfo=UTC))
    raw = json.loads(path.read_text())
    raw["repos"]["/bad"]["reflog"] = "nope"
    path.write_text(json.dumps(raw))
    loaded = load_states(path)
    assert loaded.repos == {"/r": state}
    assert loaded.saved_at == datetime(2024, 1, 2, tzinfo=UTC)
