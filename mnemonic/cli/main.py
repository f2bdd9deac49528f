"""The ``mnemonic`` command. Every command but ``serve`` is a client of the daemon's REST
API. Data goes to stdout, messages to stderr; exit codes follow sysexits."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from mnemonic import __version__
from mnemonic.cli.client import ApiError, Client, DaemonDown, token_for
from mnemonic.config import Config, load_config
from mnemonic.paths import Paths, resolve_paths

EX_USAGE = 64
EX_DATAERR = 65
EX_UNAVAILABLE = 69
EX_SOFTWARE = 70

app = typer.Typer(help="mnemonic: a local memory daemon for LLM agents.", no_args_is_help=True)
out = Console()
err = Console(stderr=True)


def _setup() -> tuple[Config, Paths]:
    paths = resolve_paths()
    overrides: dict[str, Any] = {}
    port = os.environ.get("MNEMONIC_PORT")
    if port:
        overrides["server"] = {"port": int(port)}
    return load_config(paths.config_file, **overrides), paths


def _client() -> Client:
    cfg, paths = _setup()
    token = token_for(paths, os.environ.get("MNEMONIC_TOKEN"))
    return Client(f"http://127.0.0.1:{cfg.server.port}", token)


def _call(method: str, path: str, body: Any = None, **params: Any) -> Any:
    client = _client()
    try:
        return client.request(method, path, body, **params)
    except DaemonDown:
        err.print(
            f"[red]mnemonic is not running at {client.base_url}.[/red] "
            "Start it with [bold]mnemonic serve[/bold] (or [bold]make run[/bold])."
        )
        raise typer.Exit(EX_UNAVAILABLE) from None
    except ApiError as exc:
        err.print(f"[red]error {exc.status}:[/red] {json.dumps(exc.payload)}")
        raise typer.Exit(EX_DATAERR if exc.status < 500 else EX_SOFTWARE) from None
    finally:
        client.close()


def _json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


@app.command()
def serve(
    port: Annotated[int | None, typer.Option(help="Port (default from config, 9999).")] = None,
) -> None:
    """Run the daemon in the foreground."""
    from mnemonic.daemon import serve as run_server

    cfg, paths = _setup()
    if port is not None:
        cfg = load_config(paths.config_file, server={"port": port})
    run_server(cfg, paths)


@app.command()
def remember(
    text: Annotated[str, typer.Argument(help="What to remember.")],
    project: Annotated[str, typer.Option(help="Project name.")] = "",
    type_: Annotated[str | None, typer.Option("--type", help="decision, error, ...")] = None,
    source: Annotated[str, typer.Option(help="Source label.")] = "terminal",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Store a memory (waits until it is encoded)."""
    body: dict[str, Any] = {"content": text, "project": project, "source": source}
    if type_:
        body["type"] = type_
    result = _call("POST", "/api/v1/memories", body, wait="true")
    if as_json:
        _json(result)
    else:
        out.print(f"{result['status']}: memory {result['memory_id']}")


@app.command()
def recall(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option(min=1, max=100)] = 10,
    project: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    explain: Annotated[bool, typer.Option(help="Show each signal's contribution.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Recall memories by meaning and words."""
    body: dict[str, Any] = {"query": query, "limit": limit, "explain": explain}
    if project:
        body["project"] = project
    result = _call("POST", "/api/v1/query", body)
    if as_json:
        _json(result)
        return
    table = Table(title=f"{len(result['results'])} memories ({result['took_ms']:.1f} ms)")
    table.add_column("score", justify="right")
    table.add_column("type")
    table.add_column("project")
    table.add_column("summary")
    if explain:
        table.add_column("why")
    for item in result["results"]:
        memory = item["memory"]
        row = [f"{item['score']:.3f}", memory["type"], memory["project"] or "", memory["summary"]]
        if explain:
            parts = item["explain"]["contributions"]
            row.append(", ".join(f"{k} {v:.3f}" for k, v in parts.items() if v))
        table.add_row(*row)
    out.print(table)
    out.print(f"query id: {result['query_id']}", style="dim")


@app.command()
def status(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Is the daemon running, and what does it hold? Exit 69 when it is down."""
    health = _call("GET", "/api/v1/health")
    if as_json:
        _json(health)
        return
    counts = health["memories"]
    out.print(f"mnemonic {health['version']}: {health['status']}, up {health['uptime_s']} s")
    out.print(
        f"memories: {counts['memories_active']} active, {counts['memories_archived']} archived, "
        f"{counts['raw_pending']} pending, {counts['raw_failed']} failed"
    )
    emb = health["embedding"]
    out.print(
        f"embedding: {emb['model']} ({emb['dim']}-d), vectors: {health['vector_index']['path']}"
    )


@app.command()
def token() -> None:
    """Print the API token (for Authorization: Bearer)."""
    _, paths = _setup()
    value = token_for(paths, os.environ.get("MNEMONIC_TOKEN"))
    if not value:
        err.print("no token yet: start the daemon once (mnemonic serve) to create it")
        raise typer.Exit(EX_UNAVAILABLE)
    sys.stdout.write(value + "\n")


@app.command()
def paths(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Where config, data and logs live."""
    _, p = _setup()
    data = {
        "config_file": str(p.config_file),
        "data_dir": str(p.data_dir),
        "database": str(p.database),
        "log_dir": str(p.log_dir),
    }
    if as_json:
        _json(data)
    else:
        for key, value in data.items():
            out.print(f"{key}: {value}")


config_app = typer.Typer(help="Configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("default")
def config_default() -> None:
    """Print the commented default config.yaml."""
    from mnemonic.config import render_default_yaml

    sys.stdout.write(render_default_yaml())


@config_app.command("show")
def config_show() -> None:
    """Print the effective configuration (file, environment and defaults combined)."""
    cfg, paths = _setup()
    _json({"config_file": str(paths.config_file), **cfg.model_dump(mode="json")})


@app.command()
def version() -> None:
    """Print the version."""
    sys.stdout.write(__version__ + "\n")


def main() -> None:
    app()
