"""A focused ``.gitignore`` matcher (the subset of gitignore(5) that real files use).

``pathspec`` would do this too, but the filesystem watcher needs only: comments and blank
lines, ``!`` negation, ``\\`` escapes, trailing-space trimming, directory-only patterns
(``build/``), anchoring (a ``/`` at the start or in the middle ties a pattern to the
folder of its ``.gitignore``), ``*``, ``?``, ``[...]`` classes and the three forms of
``**`` (``**/x``, ``x/**``, ``a/**/b``). Each pattern becomes one compiled regular
expression over the slash-separated path relative to the ``.gitignore``'s folder; the last
matching pattern decides, as in git.

What it does not do on its own: git's rule that nothing inside an excluded folder can be
re-included. Callers get that by checking each ancestor folder first (the watcher never
descends into an ignored folder), which is also what makes it cheap.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_STAR = "[^/]*"
_ONE = "[^/]"


@dataclass(frozen=True, slots=True)
class GitignorePattern:
    source: str
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool

    def matches(self, rel_path: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        return self.regex.fullmatch(rel_path) is not None


class GitignoreSpec:
    """The patterns of one ``.gitignore`` (or of the user's ignore list)."""

    __slots__ = ("patterns",)

    def __init__(self, patterns: list[GitignorePattern]) -> None:
        self.patterns = patterns

    @classmethod
    def from_lines(cls, lines: list[str] | tuple[str, ...]) -> GitignoreSpec:
        patterns = [p for p in (compile_pattern(line) for line in lines) if p is not None]
        return cls(patterns)

    @classmethod
    def from_text(cls, text: str) -> GitignoreSpec:
        return cls.from_lines(text.splitlines())

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def match(self, rel_path: str, is_dir: bool) -> bool | None:
        """True (ignored), False (re-included by a ``!`` pattern) or None (no pattern
        matches, so an outer ``.gitignore`` or the defaults decide)."""
        for pattern in reversed(self.patterns):
            if pattern.matches(rel_path, is_dir):
                return not pattern.negated
        return None


def compile_pattern(line: str) -> GitignorePattern | None:
    """One gitignore line as a pattern, or None for blank lines and comments."""
    text = _strip_trailing_spaces(line.rstrip("\r\n"))
    if not text or text.startswith("#"):
        return None
    negated = text.startswith("!")
    if negated or text.startswith(("\\!", "\\#")):
        text = text[1:]
    dir_only = text.endswith("/") and not text.endswith("\\/")
    text = text.rstrip("/") if dir_only else text
    if not text:
        return None
    anchored = "/" in text
    text = text.removeprefix("/")
    body = _translate(text)
    prefix = "" if anchored else "(?:.*/)?"
    return GitignorePattern(line, re.compile(prefix + body, re.DOTALL), negated, dir_only)


def _strip_trailing_spaces(text: str) -> str:
    """Trailing spaces are dropped unless the last one is escaped with a backslash."""
    stripped = text.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(text):
        return stripped[:-1] + " "
    return stripped


def _translate(pattern: str) -> str:
    """A gitignore glob (already unanchored) as a regular expression body."""
    if pattern == "**":
        return ".*"
    parts = pattern.split("/")
    out: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            if i == 0:
                out.append("(?:.*/)?")  # leading **/: any number of folders, even none
            elif last:
                out.append(".*")  # trailing /**: everything inside
            else:
                out.append("(?:.*/)?")  # a/**/b: zero or more folders between
            continue
        out.append(_translate_segment(part) + ("" if last else "/"))
    return "".join(out)


def _translate_segment(segment: str) -> str:
    out: list[str] = []
    i, n = 0, len(segment)
    while i < n:
        char = segment[i]
        if char == "\\" and i + 1 < n:
            out.append(re.escape(segment[i + 1]))
            i += 2
        elif char == "*":
            while i < n and segment[i] == "*":  # "**" inside a name is a plain star
                i += 1
            out.append(_STAR)
        elif char == "?":
            out.append(_ONE)
            i += 1
        elif char == "[":
            cls, i = _translate_class(segment, i)
            out.append(cls)
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def _translate_class(segment: str, start: int) -> tuple[str, int]:
    """``[...]`` starting at ``start``; an unterminated ``[`` is a literal bracket."""
    i = start + 1
    negate = i < len(segment) and segment[i] in "!^"
    if negate:
        i += 1
    body_start = i
    if i < len(segment) and segment[i] == "]":  # a leading ] is literal
        i += 1
    while i < len(segment) and segment[i] != "]":
        i += 1
    if i >= len(segment):
        return re.escape("["), start + 1
    body = _class_body(segment[body_start:i])
    # A class never matches the separator, negated or not.
    return ("[^/" + body + "]" if negate else "(?!/)[" + body + "]"), i + 1


def _class_body(raw: str) -> str:
    """The inside of a class with gitignore escapes resolved and regex specials quoted."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        char = raw[i]
        if char == "\\" and i + 1 < len(raw):
            i += 1
            char = raw[i]
        out.append("\\" + char if char in "\\]^[" else char)
        i += 1
    return "".join(out)
