"""Blocking reads of one repository's state, for the git watcher's worker thread.

Every command goes through GitPython's ``Git.execute`` with the binary the watcher found
(never the class-wide one GitPython guesses), explicit ``--git-dir``/``--work-tree`` (so a
``GIT_DIR`` in the daemon's environment cannot point it elsewhere), a kill timeout, and
``--no-optional-locks``: ``git status`` would otherwise take ``index.lock`` to refresh the
index, and a user's ``git commit`` at that moment would fail with "index.lock exists".
Only read-only commands are run.

Large outputs (a diff or status of 50,000 files) are streamed into the incremental parsers
of ``git_parse`` instead of being held as one string.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from mnemonic.watchers.git_discovery import RepoLocation
from mnemonic.watchers.git_parse import (
    DiffSummary,
    NameStatusParser,
    NumstatParser,
    ReflogEntry,
    StatusParser,
    StatusSummary,
    parse_reflog_line,
    split_complete_lines,
)

log = logging.getLogger(__name__)

_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}


class GitFailed(Exception):
    """A git command failed (non-zero exit, timeout) or the binary is gone."""


class _Sink(Protocol):
    def write(self, chunk: bytes) -> int: ...


class GitRunner:
    """Runs read-only git commands against one repository at a time."""

    def __init__(self, binary: str, timeout_s: float) -> None:
        self.binary = binary
        self.timeout_s = timeout_s

    def _argv(self, loc: RepoLocation, args: tuple[str, ...]) -> list[str]:
        return [
            self.binary,
            f"--git-dir={loc.git_dir}",
            f"--work-tree={loc.worktree}",
            "--no-optional-locks",
            "-c",
            "core.quotepath=off",
            *args,
        ]

    def text(self, loc: RepoLocation, *args: str, ok: tuple[int, ...] = (0,)) -> tuple[int, str]:
        """(exit status, stdout) of a command whose output is small."""
        import git

        try:
            status, out, err = git.Git(loc.worktree).execute(
                self._argv(loc, args),
                with_extended_output=True,
                with_exceptions=False,
                kill_after_timeout=self.timeout_s,
                env=_ENV,
            )
        except git.GitCommandNotFound as exc:
            raise GitFailed(f"git binary not runnable: {exc}") from exc
        if status not in ok:
            raise GitFailed(f"git {args[0]} exited {status}: {_first_line(err)}")
        return status, out if isinstance(out, str) else out.decode("utf-8", errors="replace")

    def stream(self, loc: RepoLocation, sink: _Sink, *args: str) -> None:
        """Run a command, feeding its stdout to ``sink`` in chunks as it arrives."""
        import git

        try:
            status, _, err = git.Git(loc.worktree).execute(
                self._argv(loc, args),
                with_extended_output=True,
                with_exceptions=False,
                kill_after_timeout=self.timeout_s,
                output_stream=sink,
                max_chunk_size=64 * 1024,
                env=_ENV,
            )
        except git.GitCommandNotFound as exc:
            raise GitFailed(f"git binary not runnable: {exc}") from exc
        if status != 0:
            raise GitFailed(f"git {args[0]} exited {status}: {_first_line(err)}")


def _first_line(text: str | bytes) -> str:
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    lines = text.strip().splitlines()
    return lines[0][:200] if lines else "(no message)"


def git_version(binary: str, timeout_s: float) -> str:
    """``git version 2.39.5``; raises GitFailed when the binary does not run."""
    import git

    try:
        status, out, err = git.Git().execute(
            [binary, "--version"],
            with_extended_output=True,
            with_exceptions=False,
            kill_after_timeout=timeout_s,
        )
    except git.GitCommandNotFound as exc:
        raise GitFailed(str(exc)) from exc
    text = out if isinstance(out, str) else out.decode("utf-8", errors="replace")
    if status != 0 or not text.startswith("git version"):
        raise GitFailed(f"{binary} --version exited {status}: {_first_line(err)}")
    return text.strip()


# --- HEAD and the reflog --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Head:
    branch: str | None  # None when detached
    sha: str | None  # None on an unborn branch (no commit yet)


def read_head(runner: GitRunner, loc: RepoLocation) -> Head:
    code, ref = runner.text(loc, "symbolic-ref", "-q", "HEAD", ok=(0, 1))
    branch = ref.strip().removeprefix("refs/heads/") if code == 0 else None
    code, sha = runner.text(loc, "rev-parse", "-q", "--verify", "HEAD^{commit}", ok=(0, 1))
    return Head(branch, sha.strip() if code == 0 and sha.strip() else None)


@dataclass(frozen=True, slots=True)
class ReflogPosition:
    inode: int
    offset: int


@dataclass(frozen=True, slots=True)
class ReflogRead:
    entries: list[ReflogEntry]
    position: ReflogPosition | None  # None: the repository keeps no HEAD reflog
    rewritten: bool  # expired or replaced since the last read: entries may be missing


def reflog_path(loc: RepoLocation) -> Path:
    return loc.git_dir / "logs" / "HEAD"


def read_reflog(loc: RepoLocation, since: ReflogPosition | None, max_bytes: int) -> ReflogRead:
    """New complete entries of ``logs/HEAD`` after ``since`` (None: from the start),
    at most ``max_bytes`` of them per call (the rest come on the next call)."""
    path = reflog_path(loc)
    try:
        with path.open("rb") as f:
            st = os.fstat(f.fileno())
            rewritten = since is not None and (
                st.st_ino != since.inode or st.st_size < since.offset
            )
            start = 0 if since is None or rewritten else since.offset
            f.seek(start)
            data = f.read(max_bytes)
    except FileNotFoundError:
        return ReflogRead([], None, since is not None)
    lines, used = split_complete_lines(data)
    if not lines and len(data) == max_bytes:  # one absurdly long line: step over it
        used = len(data)
    entries = [e for e in map(parse_reflog_line, lines) if e is not None]
    return ReflogRead(entries, ReflogPosition(st.st_ino, start + used), rewritten)


def reflog_end(loc: RepoLocation) -> ReflogPosition | None:
    try:
        st = reflog_path(loc).stat()
    except FileNotFoundError:
        return None
    return ReflogPosition(st.st_ino, st.st_size)


# --- commits ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommitInfo:
    sha: str
    parents: tuple[str, ...]
    author: str
    authored_at: datetime | None
    committed_at: datetime | None
    message: str


def new_commits(
    runner: GitRunner, loc: RepoLocation, old: str | None, new: str, limit: int
) -> tuple[list[str], int]:
    """Up to ``limit`` newest commits reachable from ``new`` and not from ``old``, oldest
    first, and how many there are in all."""
    spec = [new] if old is None else [new, "--not", old]
    try:
        _, out = runner.text(loc, "rev-list", f"--max-count={limit + 1}", *spec)
    except GitFailed:
        if old is None:
            raise
        log.debug("rev-list from %s failed (pruned?); taking %s alone", old[:7], new[:7])
        return [new], 1
    shas = out.split()
    total = len(shas)
    if total > limit:
        _, count = runner.text(loc, "rev-list", "--count", *spec)
        total = int(count.strip() or total)
        shas = shas[:limit]
    return shas[::-1], total


def branch_tips(runner: GitRunner, loc: RepoLocation) -> dict[str, str]:
    """Every local branch and the commit it points at (one ``for-each-ref``)."""
    _, out = runner.text(loc, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads")
    tips: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, ref = line.partition(" ")
        if ref.startswith("refs/heads/") and sha:
            tips[ref.removeprefix("refs/heads/")] = sha
    return tips


def recent_commits(
    runner: GitRunner, loc: RepoLocation, head: str, limit: int, since: datetime
) -> list[str]:
    """At most ``limit`` newest commits reachable from ``head`` committed after ``since``,
    oldest first (the first look at a repository: what was being done lately)."""
    if limit <= 0:
        return []
    _, out = runner.text(
        loc, "rev-list", f"--max-count={limit}", f"--since={int(since.timestamp())}", head
    )
    return out.split()[::-1]


def commit_info(runner: GitRunner, loc: RepoLocation, sha: str) -> CommitInfo:
    fmt = "%H%x00%P%x00%an%x00%aI%x00%cI%x00%B"
    _, out = runner.text(loc, "show", "-s", "--no-color", f"--format={fmt}", sha)
    parts = out.split("\0", 5)
    if len(parts) < 6:
        raise GitFailed(f"unexpected show output for {sha[:7]}")
    return CommitInfo(
        sha=parts[0].strip(),
        parents=tuple(parts[1].split()),
        author=parts[2],
        authored_at=_iso(parts[3]),
        committed_at=_iso(parts[4]),
        message=parts[5].strip(),
    )


def _iso(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        return None


def diff_summary(
    runner: GitRunner,
    loc: RepoLocation,
    old: str | None,
    new: str,
    *,
    max_examples: int,
    max_line_count_files: int,
) -> DiffSummary:
    """Files changed from ``old`` (None: the empty tree) to ``new``. Line totals are
    counted only when at most ``max_line_count_files`` files changed: that pass reads
    every blob, the file list does not."""
    trees = ["--root", new] if old is None else [old, new]
    names = NameStatusParser(max_examples)
    base = ("diff-tree", "-r", "-z", "--no-commit-id", "--no-renames")
    runner.stream(loc, names, *base, "--name-status", *trees)
    summary = names.summary
    if 0 < summary.files <= max_line_count_files:
        lines = NumstatParser()
        runner.stream(loc, lines, *base, "--numstat", *trees)
        summary.insertions, summary.deletions = lines.insertions, lines.deletions
        summary.binary, summary.lines_counted = lines.binary, True
    return summary


def status_summary(runner: GitRunner, loc: RepoLocation, max_examples: int) -> StatusSummary:
    parser = StatusParser(max_examples)
    runner.stream(
        loc,
        parser,
        "status",
        "--porcelain=v1",
        "-z",
        "--no-renames",
        "--untracked-files=normal",
        "--ignore-submodules=dirty",
    )
    return parser.summary
