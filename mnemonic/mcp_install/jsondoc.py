"""Our entry in a JSON config file (Claude Code, Claude Desktop, Cursor, VS Code): parse
strictly, change one key of one table, and write it back in the file's own layout.

**JSON with comments is refused, not rewritten.** VS Code's ``mcp.json`` is JSONC and
Cursor's ``mcp.json`` is often hand-written with ``//`` comments or trailing commas. A JSON
writer cannot keep comments, and silently deleting someone's notes is data loss, so such
a file is refused with a message that says why and shows the exact entry to paste (and,
for VS Code, the ``code --add-mcp`` command, which edits the file with VS Code's own
JSONC-aware writer). A file that is not JSON at all, or names a key twice (a rewrite would
keep only one), is refused the same way; the file is never touched.

The rewrite keeps every other key and its order, the file's indentation (detected from its
first indented line, two spaces by default, which is what Claude Code, VS Code and Cursor
write), its line endings and whether it ended with a newline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemonic.mcp_install.entry import merge_entry
from mnemonic.mcp_install.model import SERVER_NAME, Action, InstallError

_INDENT = re.compile(r"^([ \t]+)\S", re.MULTILINE)


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def strip_jsonc(text: str) -> str:
    """``text`` without ``//`` and ``/* */`` comments and trailing commas (strings kept);
    used only to tell "JSON with comments" from "not JSON" in the error message."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(char)
            i += 1
    return re.sub(r",(\s*[}\]])", r"\1", "".join(out))


def parse(path: Path, text: str) -> dict[str, Any]:
    """The top-level object of a JSON config file; an empty file is ``{}``."""
    if not text.strip():
        return {}
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise InstallError(
            f"{path} names the key {exc.args[0]!r} twice; mnemonic will not rewrite it "
            "(one of the two would be lost); left untouched",
            fix="remove the duplicate key and run this again",
        ) from None
    except json.JSONDecodeError as exc:
        raise _parse_error(path, text, exc) from None
    if not isinstance(doc, dict):
        raise InstallError(f"{path} is JSON but not an object ({{...}}); left untouched")
    return doc


def _parse_error(path: Path, text: str, exc: json.JSONDecodeError) -> InstallError:
    try:
        json.loads(strip_jsonc(text))
    except json.JSONDecodeError:
        return InstallError(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "left untouched",
            fix="fix or move the file and run this again",
        )
    return InstallError(
        f"{path} contains comments or trailing commas (JSON with comments); mnemonic does "
        "not rewrite such a file because the comments would be lost; left untouched",
        fix="add the entry shown below by hand",
    )


def _table(doc: dict[str, Any], container: Sequence[str], path: Path) -> dict[str, Any] | None:
    node: Any = doc
    for key in container:
        node = node.get(key)
        if node is None:
            return None
        if not isinstance(node, dict):
            raise InstallError(
                f"{path}: {'.'.join(container)} is not an object; left untouched",
                fix="fix the file by hand",
            )
    return node  # type: ignore[no-any-return]


def _table_for_write(doc: dict[str, Any], container: Sequence[str], path: Path) -> dict[str, Any]:
    _table(doc, container, path)  # refuses a non-object anywhere on the way
    node = doc
    for key in container:
        node = node.setdefault(key, {})
    return node


def install(
    path: Path, text: str, container: Sequence[str], entry: dict[str, Any]
) -> tuple[str, Action]:
    """The new text with our entry added or brought up to date, and what that was."""
    doc = parse(path, text)
    table = _table_for_write(doc, container, path)
    existing = table.get(SERVER_NAME)
    if existing is not None and not isinstance(existing, dict):
        raise InstallError(
            f"{path}: the {SERVER_NAME!r} entry is not an object; left untouched",
            fix="remove it by hand and run this again",
        )
    merged = merge_entry(existing, entry)
    if existing == merged:
        return text, "unchanged"
    table[SERVER_NAME] = merged
    return render(doc, text), "added" if existing is None else "updated"


def uninstall(path: Path, text: str, container: Sequence[str]) -> tuple[str, Action]:
    """The new text without our entry (every other server and key kept)."""
    doc = parse(path, text)
    table = _table(doc, container, path)
    if table is None or SERVER_NAME not in table:
        return text, "absent"
    del table[SERVER_NAME]
    return render(doc, text), "removed"


def render(doc: dict[str, Any], original: str) -> str:
    """``doc`` as JSON laid out like ``original``."""
    match = _INDENT.search(original)
    indent: str | int = match.group(1) if match else 2
    body = json.dumps(doc, indent=indent, ensure_ascii=False)
    text = body if original and not original.endswith(("\n", "\r")) else body + "\n"
    if "\r\n" in original:
        text = text.replace("\n", "\r\n")
    return text


def snippet(container: Sequence[str], entry: dict[str, Any]) -> str:
    """Our entry as a JSON fragment to paste by hand."""
    doc: dict[str, Any] = {SERVER_NAME: entry}
    for key in reversed(container):
        doc = {key: doc}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
