"""The words of git events: what an agent reads when it recalls one.

A commit reads like ``commit 1a2b3c4 on main in webapp by Ann: Fix race in cache eviction
(3 files, +40 -12): src/cache.py, src/lru.py, tests/test_cache.py`` followed by the body of
the message. A change too large to list (more files than ``max_files``) names its busiest
folders instead: ``(50,000 files, +50,000 -0) in vendor/ (30,000), data/ (20,000)``.
Pure functions; the metadata next to the text keeps the exact numbers.
"""

from __future__ import annotations

from typing import Any

from mnemonic.watchers.git_parse import DiffSummary, PathTally, StatusSummary, display_ref
from mnemonic.watchers.git_reader import CommitInfo


def subject_and_body(message: str, max_chars: int) -> tuple[str, str]:
    subject, _, body = message.strip().partition("\n")
    body = body.strip()
    if len(body) > max_chars:
        body = body[:max_chars].rstrip() + " …" if max_chars else ""
    return subject.strip()[:500], body


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def diff_phrase(diff: DiffSummary, max_files: int, verb: str = "") -> str:
    """``3 files, +40 -12): a, b, c`` or ``50,000 files; 50,000 added) in vendor/ (50,000)``
    (the caller opens the parenthesis; ``verb`` follows the file count)."""
    head = _count(diff.files, "file") + (f" {verb}" if verb else "")
    if diff.lines_counted:
        head += f", +{diff.insertions:,} -{diff.deletions:,}"
    elif diff.files:
        kinds = (("added", diff.added), ("modified", diff.modified), ("deleted", diff.deleted))
        head += "; " + ", ".join(f"{n:,} {word}" for word, n in kinds if n)
    if diff.files == 0:
        return head + ")"
    if diff.files <= max_files:
        return f"{head}): {', '.join(diff.tally.examples)}"
    return f"{head}) in {folders_phrase(diff.tally)}"


def folders_phrase(tally: PathTally, n: int = 5) -> str:
    return ", ".join(f"{folder} ({count:,})" for folder, count in tally.top_folders(n))


def diff_metadata(diff: DiffSummary, max_files: int) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "files_total": diff.files,
        "files_added": diff.added,
        "files_modified": diff.modified,
        "files_deleted": diff.deleted,
        "files": diff.tally.examples[:max_files],
        "summarised": diff.files > max_files,
        "top_folders": [[f, c] for f, c in diff.tally.top_folders()],
    }
    if diff.lines_counted:
        meta.update(insertions=diff.insertions, deletions=diff.deletions, binary=diff.binary)
    return meta


def commit_text(
    info: CommitInfo,
    branch: str | None,
    project: str,
    diff: DiffSummary,
    *,
    max_files: int,
    max_body_chars: int,
) -> str:
    subject, body = subject_and_body(info.message, max_body_chars)
    merge = " (merge)" if len(info.parents) > 1 else ""
    head = (
        f"commit {info.sha[:7]}{merge} on {display_ref(branch)} in {project} by "
        f"{info.author}: {subject} ({diff_phrase(diff, max_files)}"
    )
    return f"{head}\n\n{body}" if body else head


def switch_text(
    project: str, src: str, dst: str, diff: DiffSummary | None, *, max_files: int
) -> str:
    text = f"switched {project} from {display_ref(src)} to {display_ref(dst)}"
    if diff is None or diff.files == 0:
        return text
    return f"{text} ({diff_phrase(diff, max_files, 'differ')}"


def batch_text(project: str, branch: str | None, skipped: int, first: str, last: str) -> str:
    return (
        f"{_count(skipped, 'earlier commit')} arrived on {display_ref(branch)} in {project} "
        f"({first[:7]}..{last[:7]}), not listed one by one"
    )


def worktree_text(
    project: str, branch: str | None, status: StatusSummary, *, max_files: int
) -> str:
    parts = [
        f"{status.modified:,} modified" if status.modified else "",
        f"{status.added:,} added" if status.added else "",
        f"{status.deleted:,} deleted" if status.deleted else "",
        f"{status.untracked:,} untracked" if status.untracked else "",
        f"{status.conflicted:,} conflicted" if status.conflicted else "",
    ]
    counts = ", ".join(p for p in parts if p)
    head = f"uncommitted changes in {project} on {display_ref(branch)}: {counts}"
    if status.changed <= max_files:
        return f"{head}: {', '.join(status.tally.examples)}"
    shown = ", ".join(status.tally.examples[: min(5, max_files)])
    return f"{head} in {folders_phrase(status.tally)}; e.g. {shown}"


def worktree_metadata(status: StatusSummary, max_files: int) -> dict[str, Any]:
    return {
        "changed": status.changed,
        "modified": status.modified,
        "added": status.added,
        "deleted": status.deleted,
        "untracked": status.untracked,
        "conflicted": status.conflicted,
        "files": status.tally.examples[:max_files],
        "summarised": status.changed > max_files,
        "top_folders": [[f, c] for f, c in status.tally.top_folders()],
    }
