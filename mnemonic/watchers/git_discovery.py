"""Finding the git repositories under the configured roots, and where each keeps its state.

The walk is bounded three ways (depth, folders visited, repositories found) because a root
like ``~`` can hold a great deal; it never follows a symlinked folder (so a link loop
cannot trap it), skips hidden folders and the same dependency/build/cache folders the
filesystem watcher ignores, and does descend into repositories, since nested repositories
and submodules are repositories too. A ``.git`` *file* (linked worktrees, submodules)
counts as well as a ``.git`` folder.

``locate`` asks GitPython where the repository's state lives: a linked worktree has its own
``HEAD``, index and reflog under ``.git/worktrees/<name>`` but shares refs and objects with
the main repository (the common dir).
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mnemonic.watchers.fs_ignore import IGNORED_DIR_NAMES

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RepoLocation:
    """Where one working tree's git state lives."""

    worktree: Path  # the working tree's root folder
    git_dir: Path  # its own HEAD, index, index.lock and logs/HEAD
    common_dir: Path  # refs, packed-refs and objects (== git_dir unless a linked worktree)

    @property
    def project(self) -> str:
        """The repository's folder name; a linked worktree (``../app-fix``) belongs to its
        main repository (``app``), so its events group with the rest of that project."""
        if self.common_dir != self.git_dir and self.common_dir.name == ".git":
            return self.common_dir.parent.name
        return self.worktree.name


@dataclass(frozen=True, slots=True)
class DiscoveryLimits:
    max_depth: int = 3
    max_dirs: int = 20_000
    max_repos: int = 500
    skip_hidden: bool = True


def find_worktrees(
    roots: Iterable[Path], limits: DiscoveryLimits, ignore: frozenset[str] = frozenset()
) -> tuple[list[Path], bool]:
    """Folders holding a ``.git`` entry under ``roots`` (each root at depth 0), breadth
    first; and whether a limit cut the walk short."""
    skip = IGNORED_DIR_NAMES | ignore
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()
    queue: deque[tuple[Path, int]] = deque((root, 0) for root in roots)
    visited = 0
    while queue:
        folder, depth = queue.popleft()
        if visited >= limits.max_dirs or len(found) >= limits.max_repos:
            return found, True
        visited += 1
        entries = _scan(folder, seen)
        if entries is None:
            continue
        if ".git" in entries:
            found.append(folder)
        if depth >= limits.max_depth:
            continue
        for name, is_dir in sorted(entries.items()):
            if not is_dir or name in skip or (limits.skip_hidden and name.startswith(".")):
                continue
            queue.append((folder / name, depth + 1))
    return found, False


def _scan(folder: Path, seen: set[tuple[int, int]]) -> dict[str, bool] | None:
    """Entry names of ``folder`` -> is a real (not symlinked) folder; None when unreadable
    or already visited (the same folder reached twice through a bind mount or a root that
    contains another root)."""
    try:
        st = folder.stat()
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return None
        seen.add(key)
        with os.scandir(folder) as it:
            return {e.name: _is_real_dir(e) for e in it}
    except OSError as exc:
        log.debug("git discovery skipped %s: %s", folder, exc.strerror or exc)
        return None


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def locate(worktree: Path) -> RepoLocation | None:
    """Where the repository at ``worktree`` keeps its state, or None when it is not a
    usable repository (a broken ``.git`` file, a bare repository)."""
    import git  # the watcher sets GIT_PYTHON_REFRESH before the first import

    try:
        repo = git.Repo(worktree, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, OSError, ValueError) as exc:
        log.debug("not a usable git repository: %s (%s)", worktree, type(exc).__name__)
        return None
    try:
        if repo.bare or repo.working_tree_dir is None:
            return None
        return RepoLocation(
            worktree=Path(repo.working_tree_dir).resolve(),
            git_dir=Path(repo.git_dir).resolve(),
            common_dir=Path(repo.common_dir).resolve(),
        )
    finally:
        repo.close()


def expand_roots(roots: Iterable[str]) -> list[Path]:
    """Configured roots with ``~`` expanded, resolved, missing ones left out."""
    out: list[Path] = []
    for raw in roots:
        path = Path(raw).expanduser()
        try:
            path = path.resolve(strict=True)
        except OSError:
            log.debug("git root %s does not exist", path)
            continue
        if path.is_dir() and path not in out:
            out.append(path)
    return out
