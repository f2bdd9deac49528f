"""Which configured roots the filesystem watcher may watch, decided before any I/O on them.

Watching ``/`` or a whole home folder would index everything a person owns (mail, browser
profiles, caches) and exhaust inotify; credential folders must never be read at all. So a
root is refused when it is the filesystem root, the home folder or any folder above it,
or anything inside ``~/.ssh``, ``~/.aws`` or ``~/.gnupg``; a root inside another root is
dropped as a duplicate (its files are already watched). Each refusal comes with a one-line
reason for the watcher's health; the remaining roots still run.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

CREDENTIAL_DIRS = (".ssh", ".aws", ".gnupg")


@dataclass(frozen=True, slots=True)
class RootDecision:
    configured: str
    path: str  # expanded and resolved
    refused: str | None = None


def resolve_root(configured: str) -> str:
    return str(Path(os.path.expanduser(configured)).resolve())


def refusal_reason(path: str, home: str) -> str | None:
    """Why ``path`` (resolved) must not be a root, or None when it may."""
    candidate = Path(path)
    home_path = Path(home)
    if candidate == Path(candidate.anchor):
        return "refusing to watch the filesystem root; list project folders instead"
    if candidate == home_path:
        return "refusing to watch the whole home folder; list project folders instead"
    if home_path.is_relative_to(candidate):
        return "refusing a folder that contains the home folder; list project folders instead"
    for name in CREDENTIAL_DIRS:
        if candidate.is_relative_to(home_path / name):
            return f"refusing ~/{name}: it holds credentials"
    return None


def decide_roots(configured: list[str] | tuple[str, ...], home: str) -> list[RootDecision]:
    """One decision per configured root, in order; later roots inside earlier accepted
    ones (or equal to them) are refused as duplicates."""
    home_resolved = str(Path(os.path.expanduser(home)).resolve())
    decisions: list[RootDecision] = []
    accepted: list[Path] = []
    for raw in configured:
        path = resolve_root(raw)
        reason = refusal_reason(path, home_resolved)
        if reason is None:
            inside = next((a for a in accepted if Path(path).is_relative_to(a)), None)
            if inside is not None:
                reason = f"already watched as part of {inside}"
        if reason is None:
            # A new root that contains earlier ones replaces them.
            for i, earlier in enumerate(decisions):
                if earlier.refused is None and Path(earlier.path).is_relative_to(path):
                    decisions[i] = RootDecision(
                        earlier.configured, earlier.path, f"already watched as part of {path}"
                    )
                    accepted.remove(Path(earlier.path))
            accepted.append(Path(path))
        decisions.append(RootDecision(raw, path, reason))
    return decisions


def inotify_limit_advice(exc: OSError) -> str:
    """An actionable one-liner for an inotify resource error from the observer."""
    if exc.errno == errno.ENOSPC:
        return (
            "inotify watch limit reached (fs.inotify.max_user_watches="
            f"{_read_limit('max_user_watches')}); polling this root instead. Raise it with "
            "`sudo sysctl fs.inotify.max_user_watches=524288` (persist it in "
            "/etc/sysctl.d/) or watch narrower roots"
        )
    if exc.errno == errno.EMFILE:
        return (
            "inotify instance limit reached (fs.inotify.max_user_instances="
            f"{_read_limit('max_user_instances')}); polling this root instead. Raise it with "
            "`sudo sysctl fs.inotify.max_user_instances=1024` or watch fewer roots"
        )
    return f"cannot watch with inotify ({exc}); polling this root instead"


def is_inotify_limit(exc: OSError) -> bool:
    return exc.errno in (errno.ENOSPC, errno.EMFILE)


def _read_limit(name: str) -> str:
    try:
        with open(f"/proc/sys/fs/inotify/{name}", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return "unknown"
