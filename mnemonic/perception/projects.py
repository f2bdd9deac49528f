"""Which project an observation belongs to.

In order, the first answer wins:

1. a configured project whose paths contain the event's path or working directory (the
   longest matching path wins, so ``~/code/app/docs`` can be its own project inside
   ``~/code/app``);
2. the project the watcher named (the git watcher names the repository), mapped through
   the configured aliases;
3. the name of the git repository holding the folder (walking up to the nearest ``.git``;
   cached per folder, so a burst of events in one folder costs one walk);
4. the folder's own name.

Names found in steps 3 and 4 are mapped through the aliases too, so a checkout called
``webapp-v2`` can be declared an alias of ``webapp``. The home folder and the filesystem
root are never a project (a command typed in ``~`` belongs to none), and a home folder kept
in git (dotfiles) is not taken as every file's repository.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Sequence

from mnemonic.config import ProjectSpec

_NO_ROOT = ""  # cache marker: no git root above this folder
# No real folder has a longer path (PATH_MAX on Linux; 1024 on macOS). Walking up a longer
# text (a cwd read from a history file) would cost one dirname per level: quadratic.
_PATH_MAX = 4096


def _norm(path: str) -> str:
    return os.path.normpath(os.path.abspath(os.path.expanduser(path)))


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _has_git(folder: str) -> bool:
    return os.path.lexists(os.path.join(folder, ".git"))


class ProjectResolver:
    """Resolves a project name from a path, a working directory and a watcher's guess."""

    def __init__(
        self,
        projects: Sequence[ProjectSpec] = (),
        *,
        home: str | None = None,
        cache_size: int = 4096,
        has_git: Callable[[str], bool] = _has_git,
    ) -> None:
        self._paths: list[tuple[str, str]] = []
        for spec in projects:
            for raw in spec.paths:
                for variant in {_norm(raw), os.path.realpath(_norm(raw))}:
                    self._paths.append((variant, spec.name))
        self._paths.sort(key=lambda item: len(item[0]), reverse=True)
        self._aliases = {spec.name.casefold(): spec.name for spec in projects}
        for spec in projects:
            self._aliases.update({alias.casefold(): spec.name for alias in spec.aliases})
        self._home = _norm(home if home is not None else os.path.expanduser("~"))
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._cache_size = cache_size
        self._has_git = has_git

    def resolve(
        self, *, path: str | None = None, cwd: str | None = None, project: str | None = None
    ) -> str | None:
        """The project of an event at ``path`` (a file) run in ``cwd`` (a folder), which a
        watcher may have named ``project``; None when nothing says."""
        candidates = [_norm(p) for p in (path, cwd) if p]
        for candidate in candidates:
            configured = self.configured(candidate)
            if configured is not None:
                return configured
        if project:
            return self.canonical(project)
        folder = _norm(cwd) if cwd else os.path.dirname(_norm(path)) if path else None
        if folder is None:
            return None
        root = self.git_root(folder)
        name = os.path.basename(root or folder)
        if not name or self._is_home_or_above(root or folder):
            return None
        return self.canonical(name)

    def configured(self, path: str) -> str | None:
        """The configured project with the longest path containing ``path``."""
        for folder, name in self._paths:
            if _within(path, folder):
                return name
        return None

    def canonical(self, name: str) -> str:
        """The configured name for an alias (case-insensitive), else ``name`` itself."""
        return self._aliases.get(name.casefold(), name)

    def git_root(self, folder: str) -> str | None:
        """The nearest folder at or above ``folder`` holding ``.git`` (not the home folder
        or above it), cached."""
        if len(folder) > _PATH_MAX:
            return None
        cached = self._cache.get(folder)
        if cached is not None:
            self._cache.move_to_end(folder)
            return cached or None
        walked: list[str] = []
        current, found = folder, _NO_ROOT
        while True:
            if current in self._cache:
                found = self._cache[current]
                break
            walked.append(current)
            if self._is_home_or_above(current):
                break
            if self._has_git(current):
                found = current
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for item in walked:
            self._remember(item, found)
        return found or None

    def _remember(self, folder: str, root: str) -> None:
        self._cache[folder] = root
        self._cache.move_to_end(folder)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _is_home_or_above(self, folder: str) -> bool:
        return _within(self._home, folder)
