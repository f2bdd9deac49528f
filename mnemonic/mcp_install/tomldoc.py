"""Our entry in a TOML config file (Codex's ``config.toml``): ``[mcp_servers.mnemonic]``.

``tomlkit`` (a style-preserving TOML library) edits the document in place, so comments,
blank lines, key order and every other table (profiles, other servers, model settings)
come out as they went in; only the lines of our table change. An existing
``[mcp_servers.mnemonic]`` table is updated key by key, so a ``startup_timeout_sec`` or a
comment the user added inside it stays. A file that is not valid TOML is refused and left
untouched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable, Table
from tomlkit.toml_document import TOMLDocument

from mnemonic.mcp_install.entry import MANAGED_ENV
from mnemonic.mcp_install.model import SERVER_NAME, Action, InstallError


def parse(path: Path, text: str) -> TOMLDocument:
    try:
        return tomlkit.parse(text)
    except TOMLKitError as exc:
        raise InstallError(
            f"{path} is not valid TOML ({exc}); left untouched",
            fix="fix or move the file and run this again",
        ) from None


def _servers(doc: TOMLDocument, container: Sequence[str], path: Path, create: bool) -> Any:
    node: Any = doc
    for key in container:
        child = node.get(key)
        if child is None:
            if not create:
                return None
            child = tomlkit.table(is_super_table=True)
            node[key] = child
            child = node[key]
        if not isinstance(child, Table | InlineTable):
            raise InstallError(
                f"{path}: {'.'.join(container)} is not a table; left untouched",
                fix="fix the file by hand",
            )
        node = child
    return node


def _plain(value: Any) -> Any:
    unwrap = getattr(value, "unwrap", None)
    return unwrap() if callable(unwrap) else value


def _new_table(entry: Mapping[str, Any]) -> Table:
    table = tomlkit.table()
    for key, value in entry.items():
        if key == "env":
            env = tomlkit.inline_table()
            env.update(value)
            table[key] = env
        else:
            table[key] = value
    table.add(tomlkit.nl())
    return table


def _update_table(table: Any, entry: Mapping[str, Any]) -> None:
    for key, value in entry.items():
        if key != "env" and _plain(table.get(key)) != value:
            table[key] = value
    wanted = entry.get("env") or {}
    env = table.get("env")
    if env is None:
        if wanted:
            inline = tomlkit.inline_table()
            inline.update(wanted)
            table["env"] = inline
        return
    if not isinstance(env, Table | InlineTable):
        raise InstallError("the env of the mnemonic entry is not a table; left untouched")
    for key in MANAGED_ENV:
        if key in wanted:
            if _plain(env.get(key)) != wanted[key]:
                env[key] = wanted[key]
        elif key in env:
            del env[key]
    if not env:
        del table["env"]


def _render(doc: TOMLDocument) -> str:
    text = tomlkit.dumps(doc)
    return text.rstrip() + "\n" if text.strip() else ""


def install(
    path: Path, text: str, container: Sequence[str], entry: dict[str, Any]
) -> tuple[str, Action]:
    doc = parse(path, text)
    servers = _servers(doc, container, path, create=True)
    existing = servers.get(SERVER_NAME)
    if existing is None:
        servers[SERVER_NAME] = _new_table(entry)
        return _render(doc), "added"
    if not isinstance(existing, Table | InlineTable):
        raise InstallError(
            f"{path}: mcp_servers.{SERVER_NAME} is not a table; left untouched",
            fix="remove it by hand and run this again",
        )
    before = _plain(existing)
    _update_table(existing, entry)
    if _plain(existing) == before:
        return text, "unchanged"
    return _render(doc), "updated"


def uninstall(path: Path, text: str, container: Sequence[str]) -> tuple[str, Action]:
    doc = parse(path, text)
    servers = _servers(doc, container, path, create=False)
    if servers is None or SERVER_NAME not in servers:
        return text, "absent"
    del servers[SERVER_NAME]
    if not servers and len(container) == 1 and container[0] in doc:
        del doc[container[0]]  # the [mcp_servers] table only held ours
    return _render(doc), "removed"


def snippet(container: Sequence[str], entry: dict[str, Any]) -> str:
    """Our entry as a TOML fragment to paste by hand."""
    doc = tomlkit.document()
    _servers(doc, container, Path("snippet"), create=True)[SERVER_NAME] = _new_table(entry)
    return _render(doc)
