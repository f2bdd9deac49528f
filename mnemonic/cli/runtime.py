"""What every CLI command shares: the two consoles, loading the configuration the way the
daemon does, talking to the daemon, and turning failures into messages and exit codes.

Data goes to stdout (``out``, ``emit_json``); messages go to stderr (``err``), so
``mnemonic recall x --json | jq`` never sees a warning. Server-supplied text is escaped
before rich prints it: a memory containing ``[bold]`` is data, not markup.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
import yaml
from rich.console import Console
from rich.markup import escape

from mnemonic.api_token import TOKEN_ENV, configured_token
from mnemonic.cli.client import ApiError, Client, DaemonDown
from mnemonic.cli.exits import EX_CONFIG, EX_UNAVAILABLE, exit_for_status
from mnemonic.config import Config, load_config
from mnemonic.config_sources import alias_overrides, config_errors
from mnemonic.paths import Paths, resolve_paths

_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})

out = Console()
err = Console(stderr=True, soft_wrap=True)

_flags: dict[str, Any] = {}
"""Overrides from the root ``--set KEY=VALUE`` options of this invocation."""


def parse_assignments(items: Iterable[str]) -> dict[str, Any]:
    """``["server.port=9998", "recall.default_states=[active]"]`` -> nested overrides.

    Values are read as YAML, like the config file, so numbers, lists and booleans work.
    """
    result: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        parts = [p.strip() for p in key.split(".")]
        if not sep or len(parts) < 2 or not all(parts):
            raise ValueError(f"{item!r}: expected SECTION.KEY=VALUE, e.g. server.port=9998")
        try:
            value = yaml.safe_load(raw) if raw.strip() else raw
        except yaml.YAMLError as exc:
            raise ValueError(f"{item!r}: the value is not valid YAML ({exc})") from None
        node = result
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"{item!r}: {part} is already set to a value")
            node = child
        node[parts[-1]] = value
    return result


def set_flags(flags: Mapping[str, Any]) -> None:
    _flags.clear()
    _flags.update(flags)


def merge_overrides(lower: Mapping[str, Any], higher: Mapping[str, Any]) -> dict[str, Any]:
    """Nested override dicts combined, ``higher`` winning key by key."""
    merged: dict[str, Any] = dict(lower)
    for key, value in higher.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_overrides(merged[key], value)
        else:
            merged[key] = value
    return merged


def load(extra: Mapping[str, Any] | None = None) -> tuple[Config, Paths]:
    """The configuration the daemon would use (flags > env > file > default); an invalid
    one ends the command with exit 78 and the validation message. ``extra`` are a
    command's own flags (``serve --port``), stronger than the root ``--set``."""
    from pydantic import ValidationError

    paths = resolve_paths()
    overrides = merge_overrides(alias_overrides(os.environ), all_flags(extra))
    try:
        return load_config(paths.config_file, **overrides), paths
    except ValidationError as exc:
        problems = config_errors(
            exc.errors(), file=paths.config_file, environ=os.environ, flags=all_flags(extra)
        )
        err.print("[red]invalid configuration:[/red]", highlight=False)
        for line in problems:
            err.print(f"  {escape(line)}", highlight=False)
        raise typer.Exit(EX_CONFIG) from None
    except (ValueError, yaml.YAMLError) as exc:
        err.print(
            f"[red]invalid configuration[/red] (from {escape(str(paths.config_file))} "
            f"and MNEMONIC_* variables):\n{escape(str(exc))}"
        )
        raise typer.Exit(EX_CONFIG) from None


def all_flags(extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return merge_overrides(_flags, extra or {})


def daemon_url(host: str, port: int) -> str:
    """Where the CLI reaches the daemon: its loopback bind address, or 127.0.0.1 when it
    binds a wildcard (the daemon only answers loopback Host names anyway)."""
    name = host if host in _LOOPBACK else "127.0.0.1"
    if ":" in name:
        name = f"[{name}]"
    return f"http://{name}:{port}"


def token(paths: Paths) -> str:
    return configured_token(paths, os.environ.get(TOKEN_ENV))


@contextmanager
def connect() -> Iterator[Client]:
    cfg, paths = load()
    client = Client(daemon_url(cfg.server.host, cfg.server.port), token(paths))
    try:
        yield client
    finally:
        client.close()


def call(method: str, path: str, body: Any = None, **params: Any) -> Any:
    """One REST call; failures end the command with a message and a sysexits code."""
    with connect() as client:
        try:
            return client.request(method, path, body, **params)
        except DaemonDown:
            daemon_down(client.base_url)
        except ApiError as exc:
            api_failed(exc)


def daemon_down(url: str) -> NoReturn:
    err.print(
        f"[red]mnemonic is not running at {escape(url)}.[/red] Start it with "
        "[bold]mnemonic serve[/bold] (foreground) or [bold]mnemonic service install[/bold]."
    )
    raise typer.Exit(EX_UNAVAILABLE)


def api_failed(exc: ApiError) -> NoReturn:
    hint = ""
    if exc.status == 401:
        hint = (
            "\nThe token comes from MNEMONIC_TOKEN or the token file in the data folder "
            "('mnemonic paths'); it must match the running daemon's."
        )
    err.print(f"[red]error {exc.status}:[/red] {escape(exc.message)}{escape(hint)}")
    raise typer.Exit(exit_for_status(exc.status))


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def emit_line(text: str) -> None:
    """A plain data line, flushed at once (``watch`` output is read live through pipes)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
