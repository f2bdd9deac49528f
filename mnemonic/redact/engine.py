"""The redaction engine: run the rule table over a text and splice in markers.

Steps, all linear in the input length:

1. PEM private key blocks, found on the whole text by a dedicated scan (a block may be
   longer than a window).
2. Every rule of :data:`~mnemonic.redact.rules.RULES` whose trigger words occur, over
   overlapping windows of at most :data:`MAX_INPUT_CHARS` characters.
3. A candidate that overlaps or touches an existing ``[REDACTED:kind]`` marker counts as
   already redacted, so markers are never re-redacted or mangled; overlapping findings
   are merged into their outer span and take the kind of the most specific rule.
4. The lines that received a marker are scanned again until nothing changes, so the
   result is a fixed point: ``redact(redact(x).text).text == redact(x).text``.

Long input is never truncated: text longer than :data:`MAX_INPUT_CHARS` is scanned in
windows of that size that overlap by :data:`WINDOW_OVERLAP` characters, which is at least
the maximum width of every rule (a test checks this), so every match lies whole inside
some window and a secret at the end of a 10 MB paste is redacted like one at the start.
Nothing here logs: findings carry kinds and spans, never values.
"""

from __future__ import annotations

import re
import sys
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mnemonic.redact.keys import is_secret_key, secret_scalar
from mnemonic.redact.rules import (
    PEM_BEGIN,
    PEM_END,
    PEM_MAX_CHARS,
    RULES,
    SEGMENT,
    VENDOR,
    Rule,
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

    A redaction can change the context of the text around it (a marker ends a command
    where the redacted block had a newline; a name glued to a token stands alone), so the
    lines that received a marker are redacted again, until nothing changes (at most
    :data:`_MAX_PASSES` passes). Context never crosses a line except through a backslash
    continuation, which the re-scanned region follows; lines without a marker are left as
    they are. That makes the result a fixed point, which is what idempotence means.
    """
    first = _redact_once(text)
    if not first.findings:
        return first
    findings = list(first.findings)
    fresh = set(findings)
    out = first.text
    for _ in range(_MAX_PASSES - 1):
        runs, spans = _layout(text, findings)
        changed = [span for finding, span in zip(findings, spans, strict=True) if finding in fresh]
        extra: list[Finding] = []
        for start, end in _regions(out, changed):
            for f in _redact_once(out[start:end]).findings:
                orig = _to_original(runs, start + f.start)
                extra.append(Finding(f.kind, orig, orig + (f.end - f.start)))
        if not extra:
            break
        findings = sorted([*findings, *extra], key=lambda f: f.start)
        fresh = set(extra)
        out = _splice(text, findings)
    return Redaction(out, tuple(findings))


_MAX_PASSES = 4
_CONTINUATION_MAX = 4_096


def _redact_once(text: str) -> Redaction:
    """One pass of every rule over ``text``."""
    if not text:
        return Redaction(text, ())
    hits: list[_Hit] = []
    markers = _Markers(text) if "[REDACTED:" in text else None
    if "PRIVATE KEY" in text:
        _find_pem(text, hits)
    low = text.lower()
    if len(low) != len(text):
        # A few non-ASCII characters lower-case to two; keep indexes aligned by lowering
        # ASCII only (every trigger and on_lower pattern is ASCII).
        low = _ASCII_UPPER.sub(lambda m: m.group().lower(), text)
    for start, end, owned in _windows(text):
        _scan(text, low, start, end, owned, hits=hits, markers=markers)
    if not hits:
        return Redaction(text, ())
    return _apply(text, hits, markers)


def _splice(text: str, findings: list[Finding]) -> str:
    """``text`` with every finding (sorted, disjoint) replaced by its marker."""
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts += (text[pos : f.start], marker(f.kind))
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


def _layout(
    text: str, findings: list[Finding]
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Where the redacted text came from: ``(out_start, orig_start)`` of each verbatim run,
    and the span in the redacted text of each finding's marker."""
    runs: list[tuple[int, int]] = []
    spans: list[tuple[int, int]] = []
    out_pos = orig_pos = 0
    for f in findings:
        runs.append((out_pos, orig_pos))
        out_pos += f.start - orig_pos
        width = len(marker(f.kind))
        spans.append((out_pos, out_pos + width))
        out_pos += width
        orig_pos = f.end
    runs.append((out_pos, orig_pos))
    return runs, spans


def _to_original(runs: list[tuple[int, int]], out_index: int) -> int:
    """Map an index of the redacted text, outside every marker, to the original text."""
    i = bisect_right(runs, (out_index, sys.maxsize)) - 1
    out_start, orig_start = runs[i]
    return orig_start + (out_index - out_start)


def _regions(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The whole lines around ``spans``, followed over backslash continuations, merged."""
    regions: list[tuple[int, int]] = []
    for s, e in spans:  # sorted, so a span inside the last region needs no search
        if regions and e <= regions[-1][1]:
            continue
        start = text.rfind("\n", 0, s) + 1
        floor = max(0, s - _CONTINUATION_MAX)
        while start >= 2 and text[start - 2] == "\\" and start > floor:
            start = text.rfind("\n", 0, start - 1) + 1
        end = text.find("\n", e)
        ceiling = e + _CONTINUATION_MAX
        while end != -1 and end > 0 and text[end - 1] == "\\" and end < ceiling:
            end = text.find("\n", end + 1)
        end = len(text) if end == -1 else end
        if regions and start <= regions[-1][1]:
            regions[-1] = (regions[-1][0], max(regions[-1][1], end))
        else:
            regions.append((start, end))
    return regions


def _windows(text: str) -> Iterator[tuple[int, int, int]]:
    """Yield ``(start, end, owned)`` windows covering ``text`` with at least the overlap.

    The next window starts at ``owned``, at most ``WINDOW_OVERLAP`` before the current
    end and preferably at the start of a line, so a match that starts before ``owned``
    ends inside this window; matches starting at ``owned`` or later are the next
    window's, which spares scanning the overlap twice.
    """
    n = len(text)
    start = 0
    while True:
        end = min(n, start + MAX_INPUT_CHARS)
        if end >= n:
            yield start, end, end
            return
        limit = end - WINDOW_OVERLAP
        newline = text.rfind("\n", limit - _LINE_SLACK, limit)
        owned = newline + 1 if newline != -1 else limit
        yield start, end, owned
        start = owned


def _boundary_ok(text: str, i: int) -> bool:
    """Whether a command word may start at ``i``: not glued to a letter or digit before it.

    A JSON/C escape (``\\n``, ``\\t``, ``\\r``) right before counts as a boundary, so a
    command inside an escaped multi-line string is still found.
    """
    if i == 0:
        return True
    prev = text[i - 1]
    if not (prev.isascii() and prev.isalnum()):
        return True
    return prev in "ntr" and i >= 2 and text[i - 2] == "\\"


def _scan(
    text: str,
    low: str,
    start: int,
    end: int,
    owned: int,
    *,
    hits: list[_Hit],
    markers: _Markers | None,
) -> None:
    """Run every triggered rule over the matches that start in ``text[start:owned]`` (and
    end by ``end``), appending hits."""
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
        if rule.within is None:
            _collect(rule, text, subject, start, end, owned, hits=hits, markers=markers)
            continue
        pos = start
        while True:
            command = rule.pattern.search(subject, pos, end)
            if command is None or command.start() >= owned:
                break
            pos = command.end()
            if rule.boundary and not _boundary_ok(text, command.start()):
                continue
            segment = SEGMENT.match(text, pos, end)
            seg_end = segment.end() if segment is not None else pos
            _collect(
                rule, text, subject, pos, seg_end, seg_end, hits=hits, markers=markers, inner=True
            )
            pos = max(pos, seg_end)


def _collect(
    rule: Rule,
    text: str,
    subject: str,
    pos: int,
    end: int,
    owned: int,
    *,
    hits: list[_Hit],
    markers: _Markers | None,
    inner: bool = False,
) -> None:
    """Validate the matches of one rule in ``subject[pos:end]`` that start before
    ``owned`` and append their spans.

    ``inner`` runs the rule's ``within`` pattern (a command rule's segment).
    """
    pattern = rule.within if inner and rule.within is not None else rule.pattern
    covered = -1  # end of this rule's last hit: a match inside it changes nothing
    while True:
        m = pattern.search(subject, pos, end)
        if m is None or m.start() >= owned:
            return
        pos = m.end()
        if rule.groups:
            # the secret's group is the last one a rule's pattern closes (a test checks it)
            group = m.lastgroup
            if group not in rule.groups:
                continue
            s, e = m.span(group)
        else:
            s, e = m.span()
        if e <= covered:
            continue
        if markers is not None and markers.overlaps(s, e):
            # a value made of or next to marker text is already redacted: keep markers whole
            if rule.rescan:
                pos = max(m.start() + 1, s)
            continue
        # the rule's own check first: it rejects most candidates more cheaply
        if (rule.check is not None and not rule.check(text, m, s, e)) or is_placeholder(text[s:e]):
            if rule.rescan:
                pos = max(m.start() + 1, s)
            continue
        if rule.extend is not None and e == m.end():
            tail = rule.extend.match(text, e)
            if tail is not None:
                e = tail.end()
        hits.append((s, e, rule.priority, rule.kind))
        covered = e


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


def _apply(text: str, hits: list[_Hit], markers: _Markers | None) -> Redaction:
    """Merge overlapping hits (outer span, most specific kind) and splice in markers."""
    if markers is not None:
        hits = _outside_markers(markers, hits)
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


def _outside_markers(markers: _Markers, hits: list[_Hit]) -> list[_Hit]:
    """Cut existing marker spans out of every hit, keeping what lies outside them.

    Rule hits never overlap a marker (``_collect`` drops those); a PEM block without its
    END line may run over one, and its key material on either side must still go.
    """
    spans = markers.spans
    out: list[_Hit] = []
    for s, e, priority, kind in hits:
        i = bisect_right(markers.ends, s)
        pos = s
        while i < len(spans) and spans[i][0] < e:
            ms, me = spans[i]
            if pos < ms:
                out.append((pos, ms, priority, kind))
            pos = max(pos, me)
            i += 1
        if pos < e:
            out.append((pos, e, priority, kind))
    return out


class _Markers:
    """The spans of the ``[REDACTED:kind]`` markers already in a text."""

    __slots__ = ("ends", "spans")

    def __init__(self, text: str) -> None:
        self.spans = [m.span() for m in MARKER_RE.finditer(text)]
        self.ends = [end for _start, end in self.spans]

    def overlaps(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` shares or touches a character of a marker."""
        i = bisect_right(self.ends, start - 1)
        return i < len(self.spans) and self.spans[i][0] <= end


MAX_JSON_DEPTH = 256
"""The deepest nesting :func:`redact_json` accepts (the API caps metadata far lower)."""


def redact_json(value: Any, redact_text: Callable[[str], str]) -> Any:
    """``value`` (JSON-like: dicts, lists, tuples, scalars) with every string redacted,
    keys included, and the whole value under a secret-looking key replaced.

    Metadata travels with the content and can carry a secret in two ways: inside a string
    (``{"cmd": "mysql -pX"}``, which ``redact_text`` finds) and as the value of a key that
    names it (``{"db": {"password": "X"}}``, where no text rule sees the name next to the
    value). Under such a key (:func:`~mnemonic.redact.keys.is_secret_key`, judged on the
    redacted key so a second pass decides alike) every scalar of the value, at any depth,
    becomes ``[REDACTED:secret_key]`` unless it is null, a boolean, a placeholder or a path
    (:func:`~mnemonic.redact.keys.secret_scalar`). Tuples come back as lists.

    Keys that redaction makes equal (two different tokens as keys) get `` (2)``,
    `` (3)``... appended instead of overwriting each other. The walk is iterative, so deep
    nesting cannot raise ``RecursionError``; nesting deeper than :data:`MAX_JSON_DEPTH`
    (or a structure that contains itself) raises ``ValueError``: such a value is not JSON
    the store could write, and the API refuses it far earlier. Idempotent, like
    :func:`redact`.
    """
    root: list[Any] = [None]
    # (value, container to put its redaction in, slot there, under a secret key, depth)
    stack: list[tuple[Any, Any, Any, bool, int]] = [(value, root, 0, False, 0)]
    while stack:
        item, parent, slot, secret, depth = stack.pop()
        if isinstance(item, Mapping | list | tuple) and depth >= MAX_JSON_DEPTH:
            raise ValueError(f"JSON value nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(item, Mapping):
            out: dict[Any, Any] = {}
            parent[slot] = out
            for k, v in item.items():
                key = _free_key(out, redact_text(k)) if isinstance(k, str) else k
                out[key] = None
                hidden = secret or (isinstance(key, str) and is_secret_key(key))
                stack.append((v, out, key, hidden, depth + 1))
        elif isinstance(item, list | tuple):
            items: list[Any] = [None] * len(item)
            parent[slot] = items
            stack.extend((v, items, i, secret, depth + 1) for i, v in enumerate(item))
        else:
            kept = secret_scalar(item) if secret else item
            parent[slot] = redact_text(kept) if isinstance(kept, str) else kept
    return root[0]


def _free_key(out: dict[Any, Any], key: str) -> str:
    """``key``, or ``key (n)`` for the first ``n`` not yet in ``out``."""
    if key not in out:
        return key
    n = 2
    while f"{key} ({n})" in out:
        n += 1
    return f"{key} ({n})"
