"""What the filesystem watcher never looks at: the structural ignore rules.

These are not a judgement of importance (the heuristic filter does that later); they keep
out what is never a person's own writing and would drown the rest: version-control
internals, dependency and virtualenv folders, build and cache output, lockfiles and
editors' swap files, plus the user's own patterns and the ``.gitignore`` files in and
above each root.

Order of decision for one entry, first answer wins:

1. ``.git`` (folder or worktree file) is always ignored, and so are the daemon's own folders;
2. the user's patterns (gitignore syntax, relative to the root; ``!build/`` re-includes a
   default);
3. the built-in defaults (``use_defaults``), including folders holding ``pyvenv.cfg``;
4. ``.gitignore`` files, the deepest one with a matching pattern first.

A path is ignored when any folder between the root and it is ignored, so nothing inside
``node_modules`` is ever matched twice. Folder answers are cached (bounded) because every
event inside a folder asks about the same ancestors.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Iterable

from mnemonic.watchers.fs_gitignore import GitignoreSpec

log = logging.getLogger(__name__)

IGNORED_DIR_NAMES = frozenset(
    {
        # version control
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        "_darcs",
        ".jj",
        # dependencies and virtualenvs
        "node_modules",
        "bower_components",
        ".pnpm-store",
        ".yarn",
        ".venv",
        "venv",
        "site-packages",
        ".direnv",
        ".eggs",
        # build output
        "build",
        "dist",
        "target",
        "_build",
        ".next",
        ".nuxt",
        ".svelte-kit",
        ".output",
        ".turbo",
        ".parcel-cache",
        ".gradle",
        ".terraform",
        ".serverless",
        ".stack-work",
        "zig-cache",
        ".zig-cache",
        "cmake-build-debug",
        "cmake-build-release",
        # caches and tool state
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".tox",
        ".nox",
        ".cache",
        ".sass-cache",
        ".ipynb_checkpoints",
        "htmlcov",
        ".coverage_html",
        ".idea",
        ".Trash",
    }
)
IGNORED_DIR_SUFFIXES = (".egg-info", ".dist-info")

IGNORED_FILE_NAMES = frozenset(
    {
        # lockfiles that do not end in .lock
        "package-lock.json",
        "npm-shrinkwrap.json",
        "pnpm-lock.yaml",
        "bun.lockb",
        "go.sum",
        ".terraform.lock.hcl",
        # vim's write test file, OS droppings
        "4913",
        ".DS_Store",
        "Thumbs.db",
        "desktop.ini",
        ".coverage",
    }
)
# Editors' swap, backup and temporary files; lockfiles; compiled objects.
_IGNORED_FILE_RE = re.compile(
    r"""(?x)
    .*\.lock                         # Cargo.lock, poetry.lock, yarn.lock, uv.lock, ...
    | .*\.sw[a-p]                    # vim swap files (.swp, .swo, ...)
    | .*~                            # backups (vim, emacs, gedit)
    | \.\#.* | \#.*\#                # emacs lock and auto-save files
    | \.~lock\..*\# | ~\$.*          # LibreOffice and MS Office locks
    | .*\.kate-swp | \.goutputstream-.* | .*___jb_(?:tmp|old)___
    | .*\.(?:tmp|temp|crdownload|part|pyc|pyo|o|obj|class)
    """,
    re.DOTALL,
)

_CACHE_LIMIT = 50_000


def default_ignored(name: str, is_dir: bool) -> bool:
    """Whether the built-in rules ignore an entry called ``name`` (no I/O)."""
    if is_dir:
        return name in IGNORED_DIR_NAMES or name.endswith(IGNORED_DIR_SUFFIXES)
    return name in IGNORED_FILE_NAMES or _IGNORED_FILE_RE.fullmatch(name) is not None


def is_virtualenv(path: str) -> bool:
    """A folder made by ``python -m venv`` (any name) holds ``pyvenv.cfg``."""
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def find_repo_top(root: str, limit: int = 64) -> str | None:
    """The nearest folder at or above ``root`` that holds ``.git``, or None."""
    current = root
    for _ in range(limit):
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return None


class IgnoreRules:
    """The ignore decision for paths under one root; safe to share between the observer
    thread and the worker thread (caches are plain dicts guarded by a lock)."""

    def __init__(
        self,
        root: str,
        patterns: Iterable[str] = (),
        *,
        use_defaults: bool = True,
        use_gitignore: bool = True,
        excluded: Iterable[str] = (),
    ) -> None:
        self.root = root
        self._user = GitignoreSpec.from_lines(tuple(patterns))
        self._use_defaults = use_defaults
        self._use_gitignore = use_gitignore
        self._excluded = tuple(excluded)
        self._lock = threading.Lock()
        self._dir_cache: dict[str, bool] = {}
        self._spec_cache: dict[str, GitignoreSpec | None] = {}
        self._chain_cache: dict[str, tuple[tuple[str, GitignoreSpec], ...]] = {}
        self._outer = self._outer_gitignore_dirs() if use_gitignore else ()

    def invalidate(self) -> None:
        """Forget cached answers (a ``.gitignore`` changed)."""
        with self._lock:
            self._dir_cache.clear()
            self._spec_cache.clear()
            self._chain_cache.clear()

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` (absolute, under the root) or any folder above it is ignored."""
        if path == self.root:
            return False
        rel = path[len(self.root) + 1 :]
        parts = rel.split(os.sep)
        current = self.root
        for part in parts[:-1]:
            current = os.path.join(current, part)
            if self._dir_ignored(current):
                return True
        return self.entry_ignored(path, is_dir)

    def entry_ignored(self, path: str, is_dir: bool) -> bool:
        """The decision for ``path`` itself, assuming no folder above it is ignored."""
        name = path[path.rfind(os.sep) + 1 :]
        if name == ".git" or (self._excluded and self._is_excluded(path)):
            return True
        if self._user:
            user = self._user.match(path[len(self.root) + 1 :].replace(os.sep, "/"), is_dir)
            if user is not None:
                return user
        if self._use_defaults:
            if default_ignored(name, is_dir):
                return True
            if is_dir and is_virtualenv(path):
                return True
        if self._use_gitignore:
            return bool(self._gitignore_match(path, is_dir))
        return False

    def _dir_ignored(self, path: str) -> bool:
        with self._lock:
            cached = self._dir_cache.get(path)
        if cached is not None:
            return cached
        answer = self.entry_ignored(path, True)
        with self._lock:
            if len(self._dir_cache) >= _CACHE_LIMIT:
                self._dir_cache.clear()
            self._dir_cache[path] = answer
        return answer

    def _is_excluded(self, path: str) -> bool:
        return any(path == ex or path.startswith(ex + os.sep) for ex in self._excluded)

    def _gitignore_match(self, path: str, is_dir: bool) -> bool | None:
        """Deepest ``.gitignore`` with a matching pattern decides (git's precedence)."""
        for folder, spec in self._chain(os.path.dirname(path)):
            # every folder of the chain is a string prefix of ``path`` (both come from
            # dirname), so slicing is relpath without its normalisation (25x cheaper)
            relative = path[len(folder.rstrip(os.sep)) + 1 :]
            answer = spec.match(relative.replace(os.sep, "/"), is_dir)
            if answer is not None:
                return answer
        return None

    def _chain(self, folder: str) -> tuple[tuple[str, GitignoreSpec], ...]:
        """The ``.gitignore`` specs that apply inside ``folder``, deepest first (cached per
        folder: in most trees it is empty, and then a file costs one dict lookup)."""
        with self._lock:
            cached = self._chain_cache.get(folder)
        if cached is not None:
            return cached
        if folder == self.root or not folder.startswith(self.root + os.sep):
            above = tuple((d, s) for d in self._outer if (s := self._spec(d)) is not None)
        else:
            above = self._chain(os.path.dirname(folder))
        spec = self._spec(folder)
        chain = ((folder, spec), *above) if spec is not None else above
        with self._lock:
            if len(self._chain_cache) >= _CACHE_LIMIT:
                self._chain_cache.clear()
            self._chain_cache[folder] = chain
        return chain

    def _spec(self, folder: str) -> GitignoreSpec | None:
        with self._lock:
            if folder in self._spec_cache:
                return self._spec_cache[folder]
        spec = _load_gitignore(os.path.join(folder, ".gitignore"))
        with self._lock:
            if len(self._spec_cache) >= _CACHE_LIMIT:
                self._spec_cache.clear()
            self._spec_cache[folder] = spec
        return spec

    def _outer_gitignore_dirs(self) -> tuple[str, ...]:
        """Folders above the root up to its repository's top, nearest first: their
        ``.gitignore`` files apply to a root that is a sub-folder of a repository."""
        top = find_repo_top(self.root)
        if top is None or top == self.root:
            return ()
        dirs: list[str] = []
        current = os.path.dirname(self.root)
        while True:
            dirs.append(current)
            if current == top:
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        return tuple(dirs)


_MAX_GITIGNORE_BYTES = 256 * 1024


def _load_gitignore(path: str) -> GitignoreSpec | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(_MAX_GITIGNORE_BYTES)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a folder named .gitignore, a permission problem: no rules
        log.debug("cannot read %s: %s", path, exc)
        return None
    spec = GitignoreSpec.from_text(data.decode("utf-8", "replace"))
    return spec or None
