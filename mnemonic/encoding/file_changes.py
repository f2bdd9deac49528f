"""What changed between two versions of a watched file, said in a few lines.

Pure and bounded: common leading and trailing lines are stripped first (linear), the rest
goes to ``difflib.SequenceMatcher`` only while the product of the two sides' line counts
stays under ``_MAX_DIFF_CELLS``, and beyond that a multiset line diff (linear) counts what
was added and removed. The section a change falls in is the nearest enclosing
``def``/``class``/``function`` (or Markdown heading) above it, found by a cheap scan.
``app/files.py`` runs it in a worker thread and turns its summary into a memory.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

# Beyond this many line pairs (left x right, after common ends are stripped) difflib's
# matcher is not asked: its worst case is quadratic. 4M pairs is about 2,000 x 2,000 lines.
_MAX_DIFF_CELLS = 4_000_000
_SHOWN_LINES = 8  # changed lines quoted in a change memory
_SHOWN_PER_SIDE = 3  # of those, removed (or added) lines of one hunk
_LINE_CHARS = 160  # each cut to this
_SHOWN_SECTIONS = 4
_MARKDOWN = (".md", ".markdown", ".mdx")
_WS = re.compile(r"\s+")
_MEANINGFUL = re.compile(r"\w.*\w|\w\w?", re.UNICODE)
_CODE_HEADER = re.compile(
    r"^(?P<indent>[ \t]*)(?:export\s+)?(?:default\s+)?(?:pub(?:\([^)]*\))?\s+)?"
    r"(?:async\s+)?(?:"
    r"(?P<kind>def|class|function\*?|fn|func|interface|struct|enum|trait)\s+"
    r"(?:\([^)]*\)\s*)?(?P<name>[A-Za-z_$][\w$]*)"
    r"|(?:const|let|var)\s+(?P<arrow>[A-Za-z_$][\w$]*)\s*=\s*(?:async\s*)?"
    r"(?:function\b|\([^)]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>))"
)
_MD_HEADER = re.compile(r"^(?P<indent>)#{1,6}\s+(?P<title>.+?)\s*#*\s*$")


# ---- the diff (pure) ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Hunk:
    """Lines ``old[o1:o2]`` replaced by ``new[n1:n2]`` (either side may be empty)."""

    o1: int
    o2: int
    n1: int
    n2: int


@dataclass(frozen=True, slots=True)
class ChangeSummary:
    added: int
    removed: int
    sections: tuple[str, ...]  # functions, classes or headings touched, first ones first
    first_line: int  # 1-based line of the first change in the new version
    lines: tuple[str, ...]  # "- old" / "+ new", the first meaningful changed lines
    more_lines: int  # meaningful changed lines not quoted
    exact: bool  # False when the file was too different for a line-by-line match


def whitespace_only(old: str, new: str) -> bool:
    return _WS.sub("", old) == _WS.sub("", new)


def diff_hunks(
    old: Sequence[str], new: Sequence[str], max_cells: int = _MAX_DIFF_CELLS
) -> tuple[list[Hunk], bool]:
    """The changed regions between two line lists, and whether they are exact.

    Within ``max_cells`` this is difflib's matching; beyond it each side's lines that the
    other side does not have (as a multiset) are reported as one-line hunks: the counts are
    right, the pairing of old with new lines is not attempted.
    """
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end_o, end_n = len(old), len(new)
    while end_o > start and end_n > start and old[end_o - 1] == new[end_n - 1]:
        end_o -= 1
        end_n -= 1
    left, right = old[start:end_o], new[start:end_n]
    if not left and not right:
        return [], True
    if len(left) * len(right) <= max_cells:
        matcher = difflib.SequenceMatcher(None, left, right, autojunk=True)
        return [
            Hunk(start + i1, start + i2, start + j1, start + j2)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
            if tag != "equal"
        ], True
    hunks = [Hunk(start + i, start + i + 1, start, start) for i in _unmatched(left, right)]
    hunks += [Hunk(end_o, end_o, start + j, start + j + 1) for j in _unmatched(right, left)]
    return hunks, False


def _unmatched(side: Sequence[str], other: Sequence[str]) -> list[int]:
    """Indices of ``side``'s lines left over once ``other``'s lines are matched off."""
    available = Counter(other)
    out: list[int] = []
    for i, line in enumerate(side):
        if available[line] > 0:
            available[line] -= 1
        else:
            out.append(i)
    return out


@dataclass(frozen=True, slots=True)
class _Header:
    line: int
    indent: int
    label: str


def _headers(lines: Sequence[str], markdown: bool) -> list[_Header]:
    found: list[_Header] = []
    pattern = _MD_HEADER if markdown else _CODE_HEADER
    for i, line in enumerate(lines):
        if not line or (markdown and line[0] != "#"):
            continue
        match = pattern.match(line)
        if match is None:
            continue
        if markdown:
            label = match["title"][:80]
        elif match["arrow"]:
            label = f"{match['arrow']}()"
        elif match["kind"] in ("class", "interface", "struct", "enum", "trait"):
            label = f"{match['kind']} {match['name']}"
        else:
            label = f"{match['name']}()"
        found.append(_Header(i, len(match["indent"].expandtabs(4)), label))
    return found


def _section(headers: list[_Header], lines: Sequence[str], at: int, markdown: bool) -> str | None:
    """The function, class or heading that line ``at`` belongs to: the nearest header
    before it (for code, the nearest one indented less than the line, so a change at the
    top level after a function is not blamed on it)."""
    pos = bisect_right([h.line for h in headers], at)
    if markdown:
        return headers[pos - 1].label if pos else None
    if pos and headers[pos - 1].line == at:
        return headers[pos - 1].label
    text = lines[at] if at < len(lines) else ""
    indent = len(text.expandtabs(4)) - len(text.expandtabs(4).lstrip())
    for header in reversed(headers[:pos]):
        if header.indent < indent:
            return header.label
    return None


def summarize_change(
    old: str, new: str, *, path: str, max_cells: int = _MAX_DIFF_CELLS
) -> ChangeSummary | None:
    """What changed between two versions of a file; None when nothing but whitespace did."""
    if whitespace_only(old, new):
        return None
    old_lines, new_lines = old.splitlines(), new.splitlines()
    hunks, exact = diff_hunks(old_lines, new_lines, max_cells)
    markdown = path.lower().endswith(_MARKDOWN)
    new_headers = _headers(new_lines, markdown)
    old_headers: list[_Header] | None = None
    sections: list[str] = []
    shown: list[str] = []
    meaningful = 0
    for hunk in hunks:
        if hunk.n2 > hunk.n1:
            section = _section(
                new_headers, new_lines, _first_text(new_lines, hunk.n1, hunk.n2), markdown
            )
        else:
            if old_headers is None:
                old_headers = _headers(old_lines, markdown)
            section = _section(
                old_headers, old_lines, _first_text(old_lines, hunk.o1, hunk.o2), markdown
            )
        if section is not None and section not in sections:
            sections.append(section)
        for sign, lines, lo, hi in (
            ("-", old_lines, hunk.o1, hunk.o2),
            ("+", new_lines, hunk.n1, hunk.n2),
        ):
            side = 0  # a big hunk shows both what went and what came
            for line in lines[lo:hi]:
                text = line.strip()
                if not _MEANINGFUL.search(text):
                    continue
                meaningful += 1
                if len(shown) < _SHOWN_LINES and side < _SHOWN_PER_SIDE:
                    shown.append(f"{sign} {_cut(text)}")
                    side += 1
    first = min((h.n1 for h in hunks), default=0)
    return ChangeSummary(
        added=sum(h.n2 - h.n1 for h in hunks),
        removed=sum(h.o2 - h.o1 for h in hunks),
        sections=tuple(sections),
        first_line=min(first, max(len(new_lines) - 1, 0)) + 1,
        lines=tuple(shown),
        more_lines=meaningful - len(shown),
        exact=exact,
    )


def _first_text(lines: Sequence[str], lo: int, hi: int) -> int:
    for i in range(lo, hi):
        if lines[i].strip():
            return i
    return lo


def _cut(text: str) -> str:
    return text if len(text) <= _LINE_CHARS else text[: _LINE_CHARS - 1] + "…"


def change_text(name: str, summary: ChangeSummary, moved_from: str | None = None) -> str:
    """The change memory's text: one headline, then the quoted lines."""
    what = f"{name} (moved from {moved_from})" if moved_from else name
    counts = f"+{summary.added} -{summary.removed} lines"
    if summary.sections:
        places = ", ".join(summary.sections[:_SHOWN_SECTIONS])
        extra = len(summary.sections) - _SHOWN_SECTIONS
        where = f" in {places}" + (f" and {extra} more" if extra > 0 else "")
    else:
        where = f" near line {summary.first_line}"
    head = f"{what} changed ({counts}){where}"
    if not summary.exact:
        head += " (mostly rewritten)"
    body = list(summary.lines)
    if summary.more_lines > 0:
        body.append(f"… and {summary.more_lines} more changed lines")
    return "\n".join([head + (":" if body else ""), *body])


def display_name(path: str, root: str | None) -> str:
    """The path relative to its watched root (the root's own name first), else the path."""
    if root and path.startswith(root.rstrip("/") + "/"):
        return posixpath.join(
            posixpath.basename(root.rstrip("/")), path[len(root.rstrip("/")) + 1 :]
        )
    return path
