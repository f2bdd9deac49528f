"""Which existing files of a newly watched root are read at once, and which files are logs.

A root seen for the first time (no saved index) used to be recorded silently: its README
and notes were unknown until someone edited them. Now the first walk also picks up to
``initial_index_max_files`` files to read, best first by name (pure rules, table-tested):

====  =========================================================================
rank  files
====  =========================================================================
0     ``README*`` anywhere (the shallowest first)
1     notes and decisions: ``NOTES*``, ``TODO*``, ``CHANGELOG*``, ``DESIGN*``,
      ``ARCHITECTURE*``, ``DECISIONS*``, ``CONTRIBUTING*``, and documents inside
      ``docs/``, ``doc/``, ``notes/``, ``adr/``, ``decisions/``, ``wiki/``
2     other documents (``.md``, ``.rst``, ``.txt``, ``.org``, ``.adoc``)
3     everything else
====  =========================================================================

Within a rank, shallower files first, then the most recently modified. Logs, files over the
read cap and files whose extension says binary are never picked (they would only be
metadata). Ignore rules and ``.gitignore`` apply as to every walk.

Logs (``log_patterns``, ``*.log`` by default) are not read whole: only what was appended
since the last read is, so an error written to a log reaches the filter without the file's
whole history each time.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence

DOC_EXTENSIONS = frozenset({".md", ".markdown", ".rst", ".txt", ".org", ".adoc"})
NOTE_NAMES = (
    "notes",
    "todo",
    "changelog",
    "design",
    "architecture",
    "decisions",
    "contributing",
)
NOTE_FOLDERS = frozenset({"docs", "doc", "notes", "adr", "decisions", "wiki"})
BINARY_EXTENSIONS = frozenset(
    {
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".webp",
        ".ico",
        ".bmp",
        ".tiff",
        ".pdf",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".7z",
        ".rar",
        ".jar",
        ".whl",
        ".so",
        ".dylib",
        ".dll",
        ".exe",
        ".bin",
        ".dat",
        ".db",
        ".sqlite",
        ".sqlite3",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".mov",
        ".avi",
        ".wav",
        ".flac",
        ".ogg",
        ".webm",
        ".psd",
        ".sketch",
        ".xlsx",
        ".docx",
        ".pptx",
        ".odt",
        ".parquet",
        ".npy",
        ".pkl",
        ".onnx",
    }
)

RankKey = tuple[int, int, int, str]


def is_log(name: str, patterns: Sequence[str]) -> bool:
    """Whether a file called ``name`` is a log (a glob of ``patterns`` matches the name)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def initial_rank(rel: str, mtime_ns: int) -> RankKey:
    """The sort key of a file (path relative to its root) for the first read of a root:
    smaller is read first (see the module table)."""
    parts = rel.split(os.sep)
    name = parts[-1].lower()
    stem, ext = os.path.splitext(name)
    if name.startswith("readme"):
        rank = 0
    elif stem.startswith(NOTE_NAMES) or (
        ext in DOC_EXTENSIONS and any(p.lower() in NOTE_FOLDERS for p in parts[:-1])
    ):
        rank = 1
    elif ext in DOC_EXTENSIONS:
        rank = 2
    else:
        rank = 3
    return (rank, len(parts), -mtime_ns, rel)


def initial_candidate(name: str, size: int, max_bytes: int, log_patterns: Sequence[str]) -> bool:
    """Whether a file may be read on a root's first walk: not empty, not over the read
    cap, not a log, not binary by its extension."""
    if size == 0 or size > max_bytes or is_log(name, log_patterns):
        return False
    return os.path.splitext(name)[1].lower() not in BINARY_EXTENSIONS
