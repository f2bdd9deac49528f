"""The redaction engine: run the rule table over a text and splice in markers.

Steps, all linear in the input length:

1. PEM private key blocks, found on the whole text by a dedicated scan (a block may be
   longer than a window).
2. Every rule of :data:`~mnemonic.redact.rules.RULES` whose trigger words occur, over
   overlapping windows of at most :data:`MAX_INPUT_CHARS` characters.
3. Findings inside an existing ``[REDACTED:kind]`` marker are cut away, so markers are
   never re-redacted or mangled; overlapping findings are merged into their outer span and
   take the kind of the most specific rule.

Long input is never truncated: text longer than :data:`MAX_INPUT_CHARS` is scanned in
windows of that size that overlap by :data:`WINDOW_OVERLAP` characters, which is at least
the maximum width of every rule (a test checks this), so every match lies whole inside
some window and a secret at the end of a 10 MB paste is redacted like one at the start.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

from mnemonic.redact.rules import (
    PEM_BEGIN,
    PEM_END,
    PEM_MAX_CHARS,
    RULES,
    VENDOR,
    is_placeholder,
)

MAX_INPUT_CHARS = 65_536
"""The longest stretch one regex scan sees; longer input is scanned in overlapping windows
of this size (nothing is dropped)."""

WINDOW_OVERLAP = 16_384
"""How much consecutive windows overlap: at least the widest possible match of any rule."""

_LINE_SLACK = 4_096
"""How far back from the overlap point a window may start to begin on a line boundary."""

_TRIGGER_MAX_CHARS = 4_096
"""Windows up to this long run only the rules whose trigger words occur in them."""

_PEM_PRIORITY = VENDOR + 5

MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}\]")
"""A marker this module writes; input that already contains one keeps it as it is."""

_ASCII_UPPER = re.compile(r"[A-Z]{1,4096}")


def marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True, slots=True)
class Finding:
    """One redacted span: ``start``/``end`` index the *original* text."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Redaction:
    """The redacted text and what was taken out of it (kinds and spans, never values)."""

    text: str
    findings: tuple[Finding, ...]

    @property
    def changed(self) -> bool:
        """Whether anything was redacted."""
        return bool(self.findings)


# (start, end, priority, kind), absolute indexes into the original text.
_Hit = tuple[int, int, int, str]


def redact(text: str) -> Redaction:
    """Replace every secret in ``text`` by ``[REDACTED:kind]``.

    Idempotent: ``redact(redact(x).text).text == redact(x).text``. The result never
    contains the value of a finding. Runs in time linear in ``len(text)``.
    """
    if not text:
        return Redaction(text, ())
    hits: list[_Hit] = []
    if "PRIVATE KEY" in text:
        _find_pem(text, hits)
    low = text.lower()
    if len(low) != len(text):
        # A few non-ASCII characters lower-case to two; keep indexes aligned by lowering
        # ASCII only (every trigger and on_lower pattern is ASCII).
        low = _ASCII_UPPER.sub(lambda m: m.group().lower(), text)
    for start, end in _windows(text):
        _scan(text, low, start, end, hits)
    if not hits:
        return Redaction(text, ())
    return _apply(text, hits)


def _windows(text: str) -> Iterator[tuple[int, int]]:
    """Yield ``(start, end)`` windows covering ``text`` with at least the overlap.

    The next window starts at most ``WINDOW_OVERLAP`` before the current end, preferably
    at the start of a line, so a match that starts before it ends inside this window.
    """
    n = len(text)
    start = 0
    while True:
        end = min(n, start + MAX_INPUT_CHARS)
        yield start, end
        if end >= n:
            return
        limit = end - WINDOW_OVERLAP
        newline = text.rfind("\n", limit - _LINE_SLACK, limit)
        start = newline + 1 if newline != -1 else limit


def _boundary_ok(text: str, i: int) -> bool:
    """Whether a token may start at ``i``: not glued to a preceding letter or digit.

    A JSON/C escape (``\\n``, ``\\t``, ``\\r``) right before counts as a boundary, so a
    token inside an escaped multi-line string is still found.
    """
    if i == 0:
        return True
    prev = text[i - 1]
    if not (prev.isascii() and prev.isalnum()):
        return True
    return prev in "ntr" and i >= 2 and text[i - 2] == "\\"


def _scan(text: str, low: str, start: int, end: int, hits: list[_Hit]) -> None:
    # Trigger words pay off on short text (most lines have none); on a long window nearly
    # every rule triggers anyway and one search per trigger would cost more than the
    # rules, whose scans jump between literal prefixes.
    gate = end - start <= _TRIGGER_MAX_CHARS
    chunk = low if start == 0 and end == len(low) else low[start:end] if gate else ""
    for rule in RULES:
        if gate:
            for trigger in rule.triggers:
                if trigger in chunk:
                    break
            else:
                continue
        subject = low if rule.on_lower else text
        for m in rule.pattern.finditer(subject, start, end):
            if rule.boundary and not _boundary_ok(text, m.start()):
                continue
            if rule.groups:
                for group in rule.groups:
                    s = m.start(group)
                    if s != -1:
                        e = m.end(group)
                        break
                else:  # pragma: no cover - every rule's groups are alternatives
                    continue
            else:
                s, e = m.span()
            if is_placeholder(text[s:e]):
                continue
            if rule.check is not None and not rule.check(text, m, s, e):
                continue
            if rule.extend is not None and e == m.end():
                tail = rule.extend.match(text, e)
                if tail is not None:
                    e = tail.end()
            hits.append((s, e, rule.priority, rule.kind))


def _find_pem(text: str, hits: list[_Hit]) -> None:
    """Find PEM private key blocks: BEGIN line to END line, or to a bound if END is missing.

    A block without its END (a truncated paste) is redacted to the end of the input or
    :data:`~mnemonic.redact.rules.PEM_MAX_CHARS` after the BEGIN line, whichever is first:
    losing some following text is better than keeping half a private key. The search for
    the next block starts after the previous one, so the scan is linear.
    """
    n = len(text)
    pos = 0
    while True:
        begin = PEM_BEGIN.search(text, pos)
        if begin is None:
            return
        limit = min(n, begin.start() + PEM_MAX_CHARS)
        end_m = PEM_END.search(text, begin.end(), limit)
        end = end_m.end() if end_m is not None else limit
        hits.append((begin.start(), end, _PEM_PRIORITY, "private_key"))
        pos = end


def _apply(text: str, hits: list[_Hit]) -> Redaction:
    """Merge overlapping hits (outer span, most specific kind) and splice in markers."""
    if "[REDACTED:" in text:
        hits = _outside_markers(text, hits)
        if not hits:
            return Redaction(text, ())
    hits.sort()
    merged: list[_Hit] = []
    for s, e, priority, kind in hits:
        if merged and s < merged[-1][1]:
            ls, le, lp, lk = merged[-1]
            if priority > lp:
                lp, lk = priority, kind
            merged[-1] = (ls, max(le, e), lp, lk)
        else:
            merged.append((s, e, priority, kind))
    parts: list[str] = []
    findings: list[Finding] = []
    pos = 0
    for start, end, _priority, kind in merged:
        parts.append(text[pos:start])
        parts.append(marker(kind))
        findings.append(Finding(kind, start, end))
        pos = end
    parts.append(text[pos:])
    return Redaction("".join(parts), tuple(findings))


def _outside_markers(text: str, hits: list[_Hit]) -> list[_Hit]:
    """Cut existing marker spans out of every hit, keeping what lies outside them.

    Markers never overlap each other, so for each hit the markers it touches are a
    contiguous run found by bisection.
    """
    markers = [m.span() for m in MARKER_RE.finditer(text)]
    if not markers:
        return hits
    ends = [me for _ms, me in markers]
    out: list[_Hit] = []
    for s, e, priority, kind in hits:
        i = bisect_right(ends, s)
        pos = s
        while i < len(markers) and markers[i][0] < e:
            ms, me = markers[i]
            if pos < ms:
                out.append((pos, ms, priority, kind))
            pos = max(pos, me)
            i += 1
        if pos < e:
            out.append((pos, e, priority, kind))
    return out
