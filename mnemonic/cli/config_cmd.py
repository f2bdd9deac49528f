"""``mnemonic config default|show``: the documented defaults, and the effective settings
with where each one came from (flag, environment variable, config file or default)."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any

import typer
from rich.markup import escape

from mnemonic.cli.runtime import all_flags, emit_json, emit_line, err, load
from mnemonic.config_sources import Setting, explain

config_app = typer.Typer(help="Configuration: defaults and effective values.", no_args_is_help=True)


@config_app.command("default")
def config_default() -> None:
    """Print the commented default config.yaml."""
    from mnemonic.config import render_default_yaml

    sys.stdout.write(render_default_yaml())


def settings_json(config_file: str, exists: bool, settings: list[Setting]) -> dict[str, Any]:
    return {
        "config_file": config_file,
        "config_file_exists": exists,
        "settings": [s.to_json() for s in settings],
    }


def settings_lines(settings: list[Setting]) -> list[str]:
    """``key  value  source`` in aligned columns, one setting per line, never wrapped, so
    the human form can be grepped as well as read."""
    rows = [
        (s.key, s.value if isinstance(s.value, str) else json.dumps(s.value), s.label)
        for s in settings
    ]
    key_width = max((len(r[0]) for r in rows), default=0)
    value_width = min(max((len(r[1]) for r in rows), default=0), 40)
    return [f"{k:<{key_width}}  {v:<{value_width}}  {label}".rstrip() for k, v, label in rows]


@config_app.command("show")
def config_show(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Every effective setting, its value and where it came from (flag, env, file,
    default); values of keys that look secret are masked."""
    cfg, paths = load()
    settings = explain(cfg, file=paths.config_file, environ=os.environ, flags=all_flags())
    exists = paths.config_file.exists()
    if as_json:
        emit_json(settings_json(str(paths.config_file), exists, settings))
        return
    note = "" if exists else " (not there yet: defaults apply; 'mnemonic serve' writes it)"
    err.print(f"config file: {escape(str(paths.config_file))}{note}", highlight=False)
    for line in settings_lines(settings):
        emit_line(line)
