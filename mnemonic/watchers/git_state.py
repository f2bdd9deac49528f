"""What the git watcher carries across restarts: per repository, where HEAD stood, the
tip of every local branch and how far the HEAD reflog was read.

Without it, commits made while the daemon was down were never remembered: the first look
after a start only recorded where each repository stood. With it, the first look resumes
reading the reflog where the last run stopped (so commits, amends, merges and switches made
meanwhile come in order, under the usual per-poll bound and ``commit_batch`` summary), and
when that reflog was expired or replaced in between, the saved tip of the branch HEAD is on
now tells which commits are new.

The file is small JSON (a few hundred bytes per repository), written atomically (temporary
file, then rename) and private to the user (0600): repository paths and branch names can be
personal. An unreadable or foreign file is ignored with a warning: the watcher then treats
every repository as first seen, which loses no data, only the catch-up.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mnemonic.watchers.git_reader import Head, ReflogPosition

log = logging.getLogger(__name__)

STATE_VERSION = 1


@dataclass(frozen=True, slots=True)
class RepoState:
    """One repository as last seen."""

    head: Head
    reflog: ReflogPosition | None
    branches: dict[str, str] = field(default_factory=dict)  # local branch -> tip sha


@dataclass(frozen=True, slots=True)
class SavedStates:
    repos: dict[str, RepoState]
    saved_at: datetime | None  # None: no state file (the watcher's very first start)


def _to_json(state: RepoState) -> dict[str, Any]:
    reflog = state.reflog
    return {
        "branch": state.head.branch,
        "sha": state.head.sha,
        "reflog": None if reflog is None else [reflog.inode, reflog.offset],
        "branches": dict(state.branches),
    }


def _from_json(item: object) -> RepoState | None:
    if not isinstance(item, dict):
        return None
    branch, sha, reflog, branches = (
        item.get("branch"),
        item.get("sha"),
        item.get("reflog"),
        item.get("branches", {}),
    )
    if not all(v is None or isinstance(v, str) for v in (branch, sha)):
        return None
    position = None
    if reflog is not None:
        if not (
            isinstance(reflog, list)
            and len(reflog) == 2
            and all(isinstance(n, int) for n in reflog)
        ):
            return None
        position = ReflogPosition(reflog[0], reflog[1])
    if not isinstance(branches, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in branches.items()
    ):
        return None
    return RepoState(Head(branch, sha), position, dict(branches))


def save_states(path: Path, repos: Mapping[str, RepoState], now: datetime) -> None:
    """Write every repository's state atomically, private to the user."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    payload = {
        "version": STATE_VERSION,
        "saved_at": now.astimezone(UTC).isoformat(),
        "repos": {worktree: _to_json(state) for worktree, state in repos.items()},
    }
    fd, tmp = tempfile.mkstemp(prefix=".git-state-", dir=path.parent)  # created 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, separators=(",", ":"))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load_states(path: Path) -> SavedStates:
    """The saved states; no file (or an unusable one) gives ``saved_at`` None."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return SavedStates({}, None)
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable git watcher state %s: %s", path, exc)
        return SavedStates({}, None)
    if not isinstance(payload, dict) or payload.get("version") != STATE_VERSION:
        log.warning("ignoring git watcher state %s of an unknown shape", path)
        return SavedStates({}, None)
    try:
        saved_at = datetime.fromisoformat(str(payload.get("saved_at")))
    except ValueError:
        saved_at = None
    raw = payload.get("repos")
    repos: dict[str, RepoState] = {}
    for worktree, item in (raw if isinstance(raw, dict) else {}).items():
        state = _from_json(item)
        if state is None:
            log.warning("git watcher state for %s ignored: unexpected fields", worktree)
            continue
        repos[str(worktree)] = state
    if saved_at is not None and saved_at.tzinfo is None:
        saved_at = saved_at.replace(tzinfo=UTC)
    return SavedStates(repos, saved_at)
