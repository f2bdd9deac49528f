"""Install, remove, restart and inspect the mnemonic service with this machine's manager.

``plan_install`` decides everything (file, content, commands) without touching anything,
so ``--dry-run`` prints exactly what ``install`` then does. Expected failures are
:class:`ServiceError` with a sysexits code; the CLI turns them into messages.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mnemonic.exits import EX_CONFIG, EX_TEMPFAIL, EX_UNAVAILABLE
from mnemonic.install.common import (
    Backend,
    Context,
    ServiceError,
    ServiceStatus,
    Step,
    entry_command,
    run_step,
    temporary_reason,
    temporary_roots,
    write_file,
)
from mnemonic.install.launchd import LaunchdBackend
from mnemonic.install.ports import listening_process, port_in_use
from mnemonic.install.ready import wait_ready
from mnemonic.install.systemd import SystemdBackend

Say = Callable[[str], None]

#: Passed to the service: it decides where config, data and logs live. Other ``MNEMONIC_*``
#: settings belong in config.yaml; the token in particular must not be written into a unit
#: file that ``systemctl show`` prints to any local user.
PASSED_THROUGH = ("MNEMONIC_HOME",)


@dataclass(frozen=True, slots=True)
class InstallPlan:
    manager: str
    path: Path
    content: bytes
    command: list[str]
    environment: dict[str, str]
    folders: list[Path]
    steps: list[Step]
    port: int
    warnings: list[str] = field(default_factory=list)

    @property
    def ready_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/readyz"

    def as_dict(self) -> dict[str, object]:
        return {
            "manager": self.manager,
            "path": str(self.path),
            "content": self.content.decode("utf-8"),
            "exec": self.command,
            "environment": self.environment,
            "folders": [str(f) for f in self.folders],
            "commands": [list(s.argv) for s in self.steps],
            "ready_url": self.ready_url,
            "warnings": self.warnings,
        }


@dataclass(frozen=True, slots=True)
class UninstallResult:
    manager: str
    path: Path
    installed: bool
    steps: list[Step]
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "manager": self.manager,
            "path": str(self.path),
            "installed": self.installed,
            "commands": [list(s.argv) for s in self.steps],
            "warnings": self.warnings,
        }


def backend_for(ctx: Context) -> Backend | None:
    if ctx.platform.startswith("linux"):
        return SystemdBackend(ctx)
    if ctx.platform == "darwin":
        return LaunchdBackend(ctx)
    return None


def foreground_command(ctx: Context) -> str:
    return shlex.join([*entry_command(ctx.executable), "serve"])


def service_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The variables the service needs; ``MNEMONIC_HOME`` made absolute (the service's
    working folder is not the shell's)."""
    home = env.get("MNEMONIC_HOME")
    return {"MNEMONIC_HOME": str(Path(home).expanduser().resolve())} if home else {}


def left_behind(env: Mapping[str, str]) -> list[str]:
    """``MNEMONIC_*`` variables of this shell that the service will not see."""
    return sorted(k for k in env if k.startswith("MNEMONIC_") and k not in PASSED_THROUGH)


def configured_port(env: Mapping[str, str]) -> int:
    """The port the daemon will bind, from config.yaml; a broken config stops the install
    (the service would only crash-loop on it)."""
    import yaml
    from pydantic import ValidationError

    from mnemonic.config import load_config
    from mnemonic.paths import resolve_paths

    config_file = resolve_paths(env.get("MNEMONIC_HOME") or None).config_file
    try:
        return load_config(config_file).server.port
    except (ValidationError, yaml.YAMLError, ValueError) as exc:
        raise ServiceError(
            f"{config_file} is not valid, so the service could not start: {exc}",
            EX_CONFIG,
            fix="mnemonic doctor",
        ) from exc


def _require_backend(ctx: Context) -> Backend:
    backend = backend_for(ctx)
    if backend is None:
        command = foreground_command(ctx)
        raise ServiceError(
            f"no supported service manager on {ctx.platform} (systemd user units on Linux, "
            "LaunchAgents on macOS); run mnemonic in the foreground instead",
            EX_UNAVAILABLE,
            fix=command,
        )
    return backend


def plan_install(ctx: Context, *, force: bool = False, dry_run: bool = False) -> InstallPlan:
    """Everything ``install`` will do; refuses a temporary entry point unless ``force``."""
    backend = _require_backend(ctx)
    command = entry_command(ctx.executable)
    warnings: list[str] = []
    temporary = temporary_reason(command[0], temporary_roots(ctx.home))
    if temporary and not force:
        raise ServiceError(
            f"refusing to install a service that runs {command[0]}: {temporary}, which can "
            "disappear and leave the service failing at every login",
            EX_CONFIG,
            fix="install mnemonic somewhere lasting (pipx install / uv tool install) and run "
            "`mnemonic service install` from there, or pass --force",
        )
    if temporary:
        warnings.append(f"--force: {temporary}; the service breaks when that folder goes")
    unavailable = backend.unavailable_reason()
    if unavailable and not dry_run:
        foreground = foreground_command(ctx)
        raise ServiceError(
            f"{unavailable}; run mnemonic in the foreground instead",
            EX_UNAVAILABLE,
            fix=foreground,
        )
    if unavailable:
        warnings.append(f"{unavailable}: a real install stops here")
    if missed := left_behind(ctx.env):
        warnings.append(
            f"not passed to the service: {', '.join(missed)} (put settings in config.yaml)"
        )
    environment = service_environment(ctx.env)
    try:
        content = backend.render(command, environment)
    except ValueError as exc:  # a path the manager's file format cannot express
        raise ServiceError(
            str(exc), EX_CONFIG, fix="install mnemonic under a plainer path and run this again"
        ) from exc
    return InstallPlan(
        manager=backend.manager,
        path=backend.file_path(),
        content=content,
        command=[*command, "serve"],
        environment=environment,
        folders=backend.folders(),
        steps=backend.install_steps(),
        port=configured_port(ctx.env),
        warnings=warnings,
    )


def install(
    ctx: Context, plan: InstallPlan, *, wait_s: float, say: Say
) -> tuple[float | None, list[str]]:
    """Apply ``plan``; (seconds until /readyz answered, or ``None`` when ``wait_s`` is 0 and
    nobody waited; notes such as linger).

    A daemon already on the port that the service manager did not start (a foreground
    ``mnemonic serve``) holds the data folder's lock, so the service could never start:
    stop before changing anything.
    """
    backend = _require_backend(ctx)
    if not backend.status().active and port_in_use(plan.port):
        holder = listening_process(plan.port)
        who = holder.describe() if holder else "a process you cannot see"
        what = "a `mnemonic serve` in a terminal" if holder and holder.is_mnemonic else who
        raise ServiceError(
            f"port {plan.port} is already taken by {what}, not by the {plan.manager} service, "
            "so the service could not bind it",
            EX_TEMPFAIL,
            fix=f"stop {who} (Ctrl-C in its terminal), then install again",
        )
    for folder in plan.folders:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_file(plan.path, plan.content)
    say(f"wrote {plan.path}")
    for step in plan.steps:
        say(f"$ {step.shell()}")
        run_step(ctx, step)
    elapsed = _wait(plan.ready_url, wait_s, backend, say)
    return elapsed, backend.notes()


def restart(ctx: Context, *, wait_s: float, say: Say) -> float | None:
    backend = _require_backend(ctx)
    if not backend.file_path().is_file():
        raise ServiceError(
            "the service is not installed", EX_UNAVAILABLE, "mnemonic service install"
        )
    for step in backend.restart_steps():
        say(f"$ {step.shell()}")
        run_step(ctx, step)
    return _wait(f"http://127.0.0.1:{configured_port(ctx.env)}/readyz", wait_s, backend, say)


def _wait(url: str, wait_s: float, backend: Backend, say: Say) -> float | None:
    if wait_s <= 0:
        return None
    say(f"waiting up to {wait_s:.0f} s for {url}")
    elapsed = wait_ready(url, wait_s, lambda s: say(f"still waiting for the daemon ({s:.0f} s)"))
    if elapsed is None:
        raise ServiceError(
            f"the service started but {url} did not answer within {wait_s:.0f} s",
            EX_UNAVAILABLE,
            fix=backend.logs_hint(),
        )
    return elapsed


def uninstall(ctx: Context, *, dry_run: bool, say: Say) -> UninstallResult:
    """Stop, disable and remove the service; the logs and all memory data stay."""
    backend = _require_backend(ctx)
    path = backend.file_path()
    before, after = backend.uninstall_steps()
    installed = path.is_file()
    if dry_run or not installed:
        return UninstallResult(
            backend.manager, path, installed, [*before, *after] if installed else []
        )
    unavailable = backend.unavailable_reason()
    warnings: list[str] = []
    if unavailable:
        warnings.append(f"{unavailable}: removed the file without stopping anything")
        before, after = [], []
    for step in before:
        say(f"$ {step.shell()}")
        run_step(ctx, step)
    path.unlink(missing_ok=True)
    say(f"removed {path}")
    for step in after:
        say(f"$ {step.shell()}")
        run_step(ctx, step)
    return UninstallResult(backend.manager, path, installed, [*before, *after], warnings)


def status(ctx: Context) -> ServiceStatus:
    backend = backend_for(ctx)
    if backend is None:
        return ServiceStatus(
            None,
            None,
            installed=False,
            reachable=False,
            detail=f"no supported service manager on {ctx.platform}",
        )
    return backend.status()
