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
class Folder:
    """A folder discovery listed: its mtime then (an entry added or removed changes it)
    and its depth below the root."""

    mtime_ns: int
    depth: int


@dataclass(frozen=True, slots=True)
class DiscoveryLimits:
    max_depth: int = 3
    max_dirs: int = 20_000
    max_repos: int = 500
    skip_hidden: bool = True


def find_worktrees(
    roots: Iterable[Path],
    limits: DiscoveryLimits,
    ignore: frozenset[str] = frozenset(),
    *,
    folders: dict[Path, Folder] | None = None,
    start_depth: int = 0,
) -> tuple[list[Path], bool]:
    """Folders holding a ``.git`` entry under ``roots`` (each root at ``start_depth``),
    breadth first; and whether a limit cut the walk short. ``folders`` (when given)
    receives every folder listed, with its mtime and depth, for :class:`FolderWatch`."""
    skip = IGNORED_DIR_NAMES | ignore
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()
    queue: deque[tuple[Path, int]] = deque((root, start_depth) for root in roots)
    visited = 0
    while queue:
        folder, depth = queue.popleft()
        if visited >= limits.max_dirs or len(found) >= limits.max_repos:
            return found, True
        visited += 1
        listed = _scan(folder, seen)
        if listed is None:
            continue
        entries, mtime = listed
        if folders is not None and len(folders) < limits.max_dirs:
            folders[folder] = Folder(mtime, depth)
        if ".git" in entries:
            found.append(folder)
        if depth >= limits.max_depth:
            continue
        for name, is_dir in sorted(entries.items()):
            if not is_dir or name in skip or (limits.skip_hidden and name.startswith(".")):
                continue
            queue.append((folder / name, depth + 1))
    return found, False


def _scan(folder: Path, seen: set[tuple[int, int]]) -> tuple[dict[str, bool], int] | None:
    """Entry names of ``folder`` -> is a real (not symlinked) folder, and the folder's
    mtime; None when unreadable or already visited (the same folder reached twice through
    a bind mount or a root that contains another root)."""
    try:
        st = folder.stat()
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return None
        seen.add(key)
        with os.scandir(folder) as it:
            return {e.name: _is_real_dir(e) for e in it}, st.st_mtime_ns
    except OSError as exc:
        log.debug("git discovery skipped %s: %s", folder, exc.strerror or exc)
        return None


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


class FolderWatch:
    """New repositories between two full searches, for a few ``stat`` calls per poll.

    Discovery records every folder it listed, with its mtime. Adding or removing an entry
    changes a folder's mtime, so ``git init`` or ``git clone`` shows as a changed mtime of
    the folder that now holds ``.git`` (or of its parent, for a new folder). Each poll
    stats the next ``budget`` folders, round robin; a changed one is listed again: a
    ``.git`` in it is a repository, and a subfolder not seen before is searched to the
    remaining depth, as discovery would have. A home folder searched three levels deep is
    typically a few thousand folders, so a new repository is found within seconds, at a
    cost of one ``stat`` per folder looked at (measured 2-8 microseconds on a busy 2-core
    machine: the default 500 per 2 s poll is 0.1-0.2% of a core); the full search every
    ``rediscover_interval_s`` stays as the backstop (and rebuilds this table).
    """

    def __init__(self, limits: DiscoveryLimits, ignore: frozenset[str] = frozenset()) -> None:
        self._limits = limits
        self._ignore = ignore
        self._skip = IGNORED_DIR_NAMES | ignore
        self._folders: dict[Path, Folder] = {}
        self._order: list[Path] = []
        self._cursor = 0

    def __len__(self) -> int:
        return len(self._folders)

    def reset(self, folders: dict[Path, Folder]) -> None:
        self._folders = dict(folders)
        self._order = list(folders)
        self._cursor = 0

    def check(self, budget: int) -> list[Path]:
        """Look at the next ``budget`` folders; the folders now holding ``.git``."""
        found: list[Path] = []
        for _ in range(min(budget, len(self._order))):
            if self._cursor >= len(self._order):
                self._cursor = 0
            folder = self._order[self._cursor]
            self._cursor += 1
            found.extend(self._look(folder))
        if len(self._order) > 2 * len(self._folders) + 64:  # forget vanished folders
            self._order = [f for f in self._order if f in self._folders]
            self._cursor = 0
        return found

    def _look(self, folder: Path) -> list[Path]:
        known = self._folders.get(folder)
        if known is None:
            return []
        try:
            mtime = os.stat(folder).st_mtime_ns  # os.stat: a third cheaper than Path.stat
        except OSError:
            del self._folders[folder]
            return []
        if mtime == known.mtime_ns:
            return []
        listed = _scan(folder, set())
        if listed is None:
            return []
        entries, mtime = listed
        self._folders[folder] = Folder(mtime, known.depth)
        found = [folder] if ".git" in entries else []
        if known.depth >= self._limits.max_depth:
            return found
        new = [
            folder / name
            for name, is_dir in sorted(entries.items())
            if is_dir
            and name not in self._skip
            and not (self._limits.skip_hidden and name.startswith("."))
            and folder / name not in self._folders
        ]
        if new:
            added: dict[Path, Folder] = {}
            more, _ = find_worktrees(
                new, self._limits, self._ignore, folders=added, start_depth=known.depth + 1
            )
            found.extend(more)
            for path, info in added.items():
                if len(self._folders) >= self._limits.max_dirs:
                    break
                if path not in self._folders:
                    self._folders[path] = info
                    self._order.append(path)
        return found


def hinted_worktree(
    folder: Path, roots: Iterable[Path], limits: DiscoveryLimits, ignore: frozenset[str]
) -> bool:
    """Whether ``folder`` (told of by another watcher) is where discovery would look: under
    a root, within ``max_depth``, through no hidden or ignored folder."""
    skip = IGNORED_DIR_NAMES | ignore
    for root in roots:
        try:
            parts = folder.relative_to(root).parts
        except ValueError:
            continue
        if len(parts) > limits.max_depth:
            continue
        if any(p in skip or (limits.skip_hidden and p.startswith(".")) for p in parts):
            continue
        return True
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
