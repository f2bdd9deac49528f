"""Shell history file formats and the shells' own skip conventions, as pure functions.

Each parser takes the bytes read from some offset and returns the complete entries in them
and how many bytes they used, so the caller can advance its offset past whole entries only
and pick up a half-written entry on the next read. ``at_eof`` says whether the bytes end at
the end of the file: an entry that can grow (a bash multi-line command, a fish item) is
only taken as complete at the end of the file, where the shell wrote it in one go.

Formats, as the shells write them (checked against bash 5.2, zsh 5.9 and fish 3.6 here):

- **bash**: one command per line; with ``HISTTIMEFORMAT`` set, a ``#<epoch>`` line before
  each command, and then (bash's ``history_multiline_entries``) the lines up to the next
  ``#<epoch>`` line are one multi-line command. bash records no working directory.
- **zsh**: ``: <start>:<elapsed>;<command>`` with ``EXTENDED_HISTORY``, else the bare
  command; a newline inside a command is written as a backslash before the newline; the
  bytes are *metafied* (see :func:`unmetafy`). zsh records no working directory.
- **fish**: ``- cmd: <command>`` then indented ``when: <epoch>`` and ``paths:`` with
  ``- <path>`` items; backslash and newline in values are escaped as ``\\\\`` and ``\\n``.
  The paths are arguments that named existing files, not the working directory.
- **hook**: the file ``mnemonic shell-hook`` makes a shell write, one JSON object a line:
  ``{"v":1,"shell":"bash","t":<epoch>,"status":<exit>,"cwd":"...","cmd":"..."}``. It is
  the only format with the working folder and the exit status. A line that is not such an
  object is skipped (a torn last line waits for its newline).
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

Shell = Literal["bash", "zsh", "fish", "hook"]

# zsh's Meta byte (zsh.h): bytes that are zsh tokens (0x83 Meta .. 0xa2 Marker) and NUL are
# stored as Meta followed by the byte XOR 0x20.
_META = 0x83
_MARKER = 0xA2

_BASH_TIMESTAMP = re.compile(rb"#([0-9]{1,19})[ \t\r]*")
_ZSH_NUMBER = re.compile(rb"[ \t]*(-?[0-9]{1,19})")
_FISH_INDENT = re.compile(rb" *")


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One command from a history file; ``timestamp`` is Unix seconds when recorded."""

    command: str
    timestamp: int | None = None
    duration_s: int | None = None
    paths: tuple[str, ...] = ()
    cwd: str | None = None  # hook entries only
    exit_status: int | None = None  # hook entries only
    shell: str | None = None  # hook entries: the shell that wrote the line


@dataclass(frozen=True, slots=True)
class ParseResult:
    entries: list[HistoryEntry] = field(default_factory=list)
    consumed: int = 0


# --- zsh metafication ---------------------------------------------------------------------


def unmetafy(data: bytes) -> bytes:
    """zsh's ``unmetafy`` (Src/utils.c): drop each Meta byte (0x83) and XOR the byte after
    it with 0x20. A Meta byte at the very end has nothing to decode and is kept, as the
    current zsh does (``if (*t++ == Meta && *p)``)."""
    if _META not in data:
        return data
    if b"\x83\x83" not in data:  # the usual case, at C speed: each piece after a Meta
        first, *rest = data.split(b"\x83")  # starts with the byte it escapes
        out = bytearray(first)
        for piece in rest:
            if piece:
                out.append(piece[0] ^ 0x20)
                out += piece[1:]
            else:  # only the last piece can be empty here: a trailing Meta stays
                out.append(_META)
        return bytes(out)
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        byte = data[i]
        if byte == _META and i + 1 < n:
            out.append(data[i + 1] ^ 0x20)
            i += 2
        else:
            out.append(byte)
            i += 1
    return bytes(out)


def metafy(data: bytes) -> bytes:
    """zsh's ``metafy``: the inverse of :func:`unmetafy`, for NUL and bytes 0x83-0xa2
    (``imeta`` in zsh's type table). Used to write zsh-format test files."""
    out = bytearray()
    for byte in data:
        if byte == 0 or _META <= byte <= _MARKER:
            out += bytes((_META, byte ^ 0x20))
        else:
            out.append(byte)
    return bytes(out)


# --- shared helpers -------------------------------------------------------------------------


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _lines(data: bytes) -> Iterator[tuple[bytes, int, int]]:
    """Complete lines (without the newline) with their start and end offsets; a trailing
    line without its newline is not complete and is left out."""
    start = 0
    while True:
        end = data.find(b"\n", start)
        if end < 0:
            return
        yield data[start:end], start, end + 1
        start = end + 1


# --- bash -------------------------------------------------------------------------------------


def bash_has_timestamps(head: bytes) -> bool:
    """bash treats a file as timestamped (and multi-line) when its first line is one."""
    first = head.split(b"\n", 1)[0]
    return _BASH_TIMESTAMP.fullmatch(first) is not None


def parse_bash(data: bytes, *, multiline: bool, at_eof: bool = True) -> ParseResult:
    """Parse bash history. ``multiline`` is :func:`bash_has_timestamps` of the whole file
    (not of ``data``, which may start mid-file). A ``#<epoch>`` line waiting for its command
    is not consumed; with ``multiline``, the last entry is held back unless ``at_eof``."""
    entries: list[tuple[list[bytes], int | None, int]] = []  # lines, timestamp, end offset
    pending_ts: int | None = None
    for line, _start, end in _lines(data):
        stamp = _BASH_TIMESTAMP.fullmatch(line)
        if stamp is not None:
            pending_ts = int(stamp.group(1))
            continue
        if multiline and pending_ts is None and entries:
            lines, ts, _ = entries[-1]
            lines.append(line)
            entries[-1] = (lines, ts, end)
        else:
            entries.append(([line], pending_ts, end))
            pending_ts = None
    if multiline and not at_eof and entries:
        entries.pop()
    consumed = entries[-1][2] if entries else 0
    result = [HistoryEntry(_decode(b"\n".join(lines)).rstrip("\r"), ts) for lines, ts, _ in entries]
    return ParseResult([e for e in result if e.command.strip()], consumed)


# --- zsh ----------------------------------------------------------------------------------------


def _zsh_records(data: bytes) -> Iterator[tuple[bytes, int]]:
    """Logical zsh records (continuation lines joined, as zsh's ``readhistline`` does) with
    the offset just past each; a record still waiting for its continuation is left out."""
    parts: list[bytes] = []
    for line, _start, end in _lines(data):
        if line.endswith(b"\\"):
            parts.append(line[:-1] + b"\n")
            continue
        record = b"".join((*parts, line))
        parts = []
        # zsh writes a space after a command that ends in backslashes (so the backslash
        # is not read as a continuation) and drops it again when reading.
        stripped = record.rstrip(b" ")
        if len(stripped) != len(record) and stripped.endswith(b"\\"):
            record = record[:-1]
        yield record, end


def _zsh_entry(record: bytes) -> HistoryEntry:
    """One record to an entry, after zsh's ``readhistfile``: an extended ``:`` prefix gives
    the start time and the elapsed seconds; ``\\:`` escapes a leading colon otherwise."""
    text = unmetafy(record)
    if text.startswith(b":"):
        start_match = _ZSH_NUMBER.match(text, 1)
        started = int(start_match.group(1)) if start_match else 0
        colon = text.find(b":", 1)
        if colon < 0:
            return HistoryEntry("", started or None)
        elapsed_match = _ZSH_NUMBER.match(text, colon + 1)
        elapsed = int(elapsed_match.group(1)) if elapsed_match else 0
        semi = text.find(b";", colon + 1)
        command = text[semi + 1 :] if semi >= 0 else b""
        # zsh writes the elapsed time; very old files held the finish time instead.
        duration = elapsed if elapsed < started or started == 0 else elapsed - started
        return HistoryEntry(_decode(command), started or None, max(duration, 0))
    if text.startswith(b"\\:"):
        text = text[1:]
    return HistoryEntry(_decode(text))


def parse_zsh(data: bytes, *, at_eof: bool = True) -> ParseResult:
    """Parse zsh history (extended or plain, metafied). A record is complete at its first
    line that does not end in a backslash, so ``at_eof`` does not matter here."""
    del at_eof  # a zsh record's end is always visible in the bytes
    entries: list[HistoryEntry] = []
    consumed = 0
    for record, end in _zsh_records(data):
        consumed = end
        entry = _zsh_entry(record)
        if entry.command.strip():
            entries.append(entry)
    return ParseResult(entries, consumed)


# --- fish -----------------------------------------------------------------------------------------


def fish_unescape(value: bytes) -> bytes:
    """fish's ``unescape_yaml_fish_2_0``: ``\\\\`` is a backslash and ``\\n`` a newline; any
    other backslash is kept as it is."""
    if b"\\" not in value:
        return value
    out = bytearray()
    i, n = 0, len(value)
    while i < n:
        if value[i] == 0x5C and i + 1 < n and value[i + 1] in b"\\n":
            out.append(0x5C if value[i + 1] == 0x5C else 0x0A)
            i += 2
        else:
            out.append(value[i])
            i += 1
    return bytes(out)


def _fish_value(line: bytes) -> tuple[bytes, bytes] | None:
    key, sep, value = line.partition(b":")
    if not sep:
        return None
    return key, fish_unescape(value.lstrip(b" \t\r\n\x0b\x0c"))


def _fish_entry(lines: Sequence[bytes]) -> HistoryEntry | None:
    """One item (its ``- cmd`` line and the indented lines after it), after fish's
    ``decode_item_fish_2_0``."""
    head = _fish_value(lines[0].lstrip())
    if head is None or not head[0].startswith(b"- cmd"):
        return None
    when: int | None = None
    paths: list[str] = []
    in_paths = False
    indent: int | None = None
    for line in lines[1:]:
        this_indent = _FISH_INDENT.match(line)
        spaces = this_indent.end() if this_indent else 0
        body = line[spaces:]
        if indent is None:
            indent = spaces
        if in_paths and spaces > indent and body.startswith(b"- "):
            paths.append(_decode(fish_unescape(body[2:])))
            continue
        in_paths = False
        pair = _fish_value(body) if spaces == indent else None
        if pair is None:
            continue
        key, value = pair
        if key == b"when":
            when = int(value) if value.strip().isdigit() else None
        elif key == b"paths":
            in_paths = True
    return HistoryEntry(_decode(head[1]), when, None, tuple(paths))


def parse_fish(data: bytes, *, at_eof: bool = True) -> ParseResult:
    """Parse fish history. An item runs from a ``- cmd`` line to the next unindented line;
    the last item is complete only ``at_eof`` (fish appends an item in one write)."""
    groups: list[tuple[list[bytes], int]] = []  # lines, end offset
    orphans_end = 0  # indented lines before the first item (a read that began mid-item)
    for line, _start, end in _lines(data):
        if line.startswith(b" "):
            if groups:
                groups[-1][0].append(line)
                groups[-1] = (groups[-1][0], end)
            else:
                orphans_end = end
            continue
        groups.append(([line], end))
    if not at_eof and groups:
        groups.pop()
    entries = [e for lines, _ in groups if (e := _fish_entry(lines)) and e.command.strip()]
    return ParseResult(entries, groups[-1][1] if groups else orphans_end)


# --- the shell hook's JSON lines -----------------------------------------------------------------


def _hook_entry(line: bytes) -> HistoryEntry | None:
    try:
        item = json.loads(line.decode("utf-8", errors="replace"), strict=False)
    except ValueError:
        return None
    if not isinstance(item, dict) or not isinstance(item.get("cmd"), str):
        return None
    t, status, cwd, shell = item.get("t"), item.get("status"), item.get("cwd"), item.get("shell")
    return HistoryEntry(
        item["cmd"],
        t if isinstance(t, int) and not isinstance(t, bool) and t > 0 else None,
        cwd=cwd if isinstance(cwd, str) and cwd else None,
        exit_status=status if isinstance(status, int) and not isinstance(status, bool) else None,
        shell=shell if isinstance(shell, str) else None,
    )


def parse_hook(data: bytes, *, at_eof: bool = True) -> ParseResult:
    """Parse the hook's JSON lines; each complete line is one entry or nothing."""
    del at_eof  # a line is complete at its newline
    entries: list[HistoryEntry] = []
    consumed = 0
    for line, _start, end in _lines(data):
        consumed = end
        entry = _hook_entry(line)
        if entry is not None and entry.command.strip():
            entries.append(entry)
    return ParseResult(entries, consumed)


# --- format detection ---------------------------------------------------------------------------


_ZSH_EXTENDED_LINE = re.compile(rb"^: *[0-9]{1,19}:[0-9]{1,19};", re.MULTILINE)


def detect_shell(name: str, head: bytes) -> Shell:
    """Which shell wrote a history file: by its content when it shows, else by its name
    (``fish_history``, ``.zsh_history``/``.zhistory``/``.histfile``), else bash."""
    first = head.lstrip().split(b"\n", 1)[0]
    if name.endswith(".jsonl") or first.startswith(b'{"v":'):
        return "hook"
    if first.startswith(b"- cmd:"):
        return "fish"
    if _ZSH_EXTENDED_LINE.search(head):
        return "zsh"
    if _BASH_TIMESTAMP.fullmatch(first):
        return "bash"
    lowered = name.lower()
    if "fish" in lowered:
        return "fish"
    if "zsh" in lowered or "zhist" in lowered or lowered.endswith(".histfile"):
        return "zsh"
    return "bash"


def parse(shell: Shell, data: bytes, *, at_eof: bool, bash_multiline: bool) -> ParseResult:
    if shell == "zsh":
        return parse_zsh(data, at_eof=at_eof)
    if shell == "fish":
        return parse_fish(data, at_eof=at_eof)
    if shell == "hook":
        return parse_hook(data, at_eof=at_eof)
    return parse_bash(data, multiline=bash_multiline, at_eof=at_eof)


# --- skip rules (HISTCONTROL, HISTIGNORE, trivial commands) ---------------------------------------


def split_histignore(spec: str) -> list[str]:
    """bash's ``HISTIGNORE``: colon-separated patterns; a backslash escapes a colon."""
    patterns: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(spec):
        char = spec[i]
        if char == "\\" and i + 1 < len(spec) and spec[i + 1] == ":":
            current.append(":")
            i += 2
            continue
        if char == ":":
            patterns.append("".join(current))
            current = []
        else:
            current.append(char)
        i += 1
    patterns.append("".join(current))
    return [p for p in patterns if p]


def matches_histignore(command: str, same_as_previous: bool, patterns: Sequence[str]) -> bool:
    """Whether a ``HISTIGNORE`` pattern matches the whole command: ``&`` stands for the
    previous command (the caller compares, so it need not keep the text), ``\\&`` for a
    literal ``&``; the rest are shell globs."""
    for pattern in patterns:
        if pattern == "&":
            if same_as_previous:
                return True
            continue
        if fnmatch.fnmatchcase(command, pattern.replace("\\&", "&")):
            return True
    return False


# Anything that chains, redirects or substitutes makes a command more than a glance.
_COMPOUND = re.compile(r"[;&|<>`\n]|\$\(")
_SPACES = re.compile(r"\s+")


def is_trivial(command: str, patterns: Sequence[str]) -> bool:
    """A simple command (no chaining, pipes, redirection or substitution) that matches one
    of the trivial patterns (globs over the command with its spaces collapsed)."""
    if _COMPOUND.search(command):
        return False
    normal = _SPACES.sub(" ", command.strip())
    return any(fnmatch.fnmatchcase(normal, pattern) for pattern in patterns)


def skip_reason(
    command: str,
    *,
    same_as_previous: bool,
    ignore_space: bool,
    histignore: Sequence[str],
    trivial: Sequence[str],
) -> str | None:
    """Why a command is not worth an event (``ignorespace``, ``histignore``, ``trivial``),
    or None. ``same_as_previous`` says whether it repeats the command before it in the
    same file (for ``&``)."""
    if ignore_space and command[:1] in (" ", "\t"):
        return "ignorespace"
    if histignore and matches_histignore(command, same_as_previous, histignore):
        return "histignore"
    if trivial and is_trivial(command, trivial):
        return "trivial"
    return None
