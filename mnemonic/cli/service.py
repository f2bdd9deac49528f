"""``mnemonic service install|uninstall|restart|status``: run the daemon in the background
under the user's service manager (systemd user unit, macOS LaunchAgent).

Data (the planned file, JSON) goes to stdout; progress and warnings to stderr; failures
exit with the sysexits code of the :class:`ServiceError` (69 no manager, 70 a command
failed, 75 the port is taken, 78 a temporary install or a broken config).
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.console import Console

from mnemonic.install import Context, ServiceError, ServiceStatus
from mnemonic.install import manager as service

service_app = typer.Typer(
    help="Run mnemonic as a background service (systemd user unit / macOS LaunchAgent).",
    no_args_is_help=True,
)
_err = Console(stderr=True, highlight=False, soft_wrap=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Show what would happen; change nothing.")
]
TimeoutOpt = Annotated[
    float, typer.Option("--timeout", min=0, help="Seconds to wait for /readyz (0: don't wait).")
]


def register(app: typer.Typer) -> None:
    """Add the ``service`` command group to the main app."""
    app.add_typer(service_app, name="service")


def _say(message: str) -> None:
    _err.print(message, markup=False, style="dim")


def _warn(message: str) -> None:
    _err.print(f"warning: {message}", markup=False, style="yellow")


def _emit(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _fail(exc: ServiceError, as_json: bool) -> typer.Exit:
    _err.print(exc.message, markup=False, style="red")
    if exc.fix:
        _err.print(f"fix: {exc.fix}", markup=False)
    if as_json:
        _emit({"ok": False, "error": exc.message, "fix": exc.fix, "exit_code": exc.exit_code})
    return typer.Exit(exc.exit_code)


@service_app.command()
def install(
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
    force: Annotated[
        bool, typer.Option("--force", help="Install even from a temporary environment.")
    ] = False,
    timeout: TimeoutOpt = 60.0,
) -> None:
    """Install, enable and start the service, then wait until the daemon is ready."""
    ctx = Context.current()
    try:
        plan = service.plan_install(ctx, force=force, dry_run=dry_run)
        for warning in plan.warnings:
            _warn(warning)
        if dry_run:
            _show_plan(plan, as_json)
            return
        elapsed, notes = service.install(ctx, plan, wait_s=timeout, say=_say)
    except ServiceError as exc:
        raise _fail(exc, as_json) from None
    for note in notes:
        _warn(note)
    if as_json:
        _emit({"ok": True, **plan.as_dict(), "ready_after_s": elapsed, "notes": notes})
        return
    ready = f", ready in {elapsed:.1f} s" if elapsed is not None else ""
    url = plan.ready_url.removesuffix("/readyz")
    sys.stdout.write(f"mnemonic runs as a {plan.manager} service{ready}: {url}\n")


def _show_plan(plan: service.InstallPlan, as_json: bool) -> None:
    if as_json:
        _emit({"ok": True, "dry_run": True, **plan.as_dict()})
        return
    out = sys.stdout
    out.write(f"# would write {plan.path}\n")
    out.write(plan.content.decode("utf-8"))
    if plan.folders:
        out.write("# would create " + ", ".join(str(f) for f in plan.folders) + "\n")
    out.write("# would run\n")
    for step in plan.steps:
        out.write(f"$ {step.shell()}\n")
    out.write(f"# then wait for {plan.ready_url}\n")


@service_app.command()
def uninstall(dry_run: DryRunOpt = False, as_json: JsonOpt = False) -> None:
    """Stop and disable the service and remove its file (memories and logs stay)."""
    ctx = Context.current()
    try:
        result = service.uninstall(ctx, dry_run=dry_run, say=_say)
    except ServiceError as exc:
        raise _fail(exc, as_json) from None
    for warning in result.warnings:
        _warn(warning)
    if as_json:
        _emit({"ok": True, "dry_run": dry_run, **result.as_dict()})
    elif not result.installed:
        sys.stdout.write(f"not installed ({result.path} does not exist)\n")
    elif dry_run:
        for step in result.steps:
            sys.stdout.write(f"$ {step.shell()}\n")
        sys.stdout.write(f"# would remove {result.path}\n")
    else:
        sys.stdout.write(f"removed the {result.manager} service\n")


@service_app.command()
def restart(as_json: JsonOpt = False, timeout: TimeoutOpt = 60.0) -> None:
    """Restart the service (after upgrading mnemonic) and wait until it is ready."""
    ctx = Context.current()
    try:
        elapsed = service.restart(ctx, wait_s=timeout, say=_say)
    except ServiceError as exc:
        raise _fail(exc, as_json) from None
    if as_json:
        _emit({"ok": True, "ready_after_s": elapsed})
    else:
        sys.stdout.write("restarted\n")


@service_app.command()
def status(as_json: JsonOpt = False) -> None:
    """Is the service installed, enabled and running? (Linux: is linger on?)"""
    state = service.status(Context.current())
    if as_json:
        _emit(state.as_dict())
        return
    for key, value in describe(state):
        sys.stdout.write(f"{key + ':':<10} {value}\n")


def describe(state: ServiceStatus) -> list[tuple[str, str]]:
    """Human lines for a status (pure, so it is table-tested)."""

    def word(flag: bool | None) -> str:
        return {True: "yes", False: "no", None: "unknown"}[flag]

    if state.manager is None:
        return [("manager", state.detail)]
    reach = "reachable" if state.reachable else f"not reachable: {state.detail}"
    rows = [
        ("manager", f"{state.manager} ({reach})"),
        ("file", f"{state.path} ({'installed' if state.installed else 'not installed'})"),
        ("enabled", word(state.enabled)),
    ]
    active = word(state.active)
    if state.reachable:
        active += f" ({state.detail}" + (f", pid {state.pid})" if state.pid else ")")
    rows.append(("active", active))
    if state.manager == "systemd":
        linger = word(state.linger)
        if state.linger is False:
            linger += " (the service stops at logout; fix: loginctl enable-linger $USER)"
        rows.append(("linger", linger))
    return rows
