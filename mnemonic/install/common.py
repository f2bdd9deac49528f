"""What every service backend shares: who and where we are, the command that starts this
install of mnemonic, the refusal to point a service at a temporary environment, the
templates, and how outside commands run.

The operating system and the command runner live in :class:`Context` so that tests can
render the macOS agent on Linux and script ``launchctl``/``systemctl`` answers; nothing
below reads ``sys.platform`` or calls ``subprocess`` on its own.
"""

from __future__ import annotations

import getpass
import logging
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from mnemonic.exits import EX_SOFTWARE

log = logging.getLogger(__name__)

#: systemctl may block until the daemon reports READY (TimeoutStartSec=120 in the unit).
COMMAND_TIMEOUT_S = 180.0

#: Environments that tools create and later delete on their own: a service pointing into
#: one stops starting the day the cache is cleaned (uvx and ``pipx run`` environments).
_EPHEMERAL_MARKERS = ("/archive-v0/", "/pipx/.cache/", "/.cache/pipx/")

_PLACEHOLDER = re.compile(r"@([A-Z_]+)@")


class Runner(Protocol):
    """The part of ``subprocess.run`` the backends use (``subprocess.run`` satisfies it)."""

    def __call__(
        self,
        args: Sequence[str],
        *,
        capture_output: bool,
        text: bool,
        check: bool,
        timeout: float | None,
    ) -> subprocess.CompletedProcess[str]: ...


class ServiceError(Exception):
    """An expected failure of a service command, with its exit code and a one-line fix."""

    def __init__(self, message: str, exit_code: int, fix: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.fix = fix


@dataclass(frozen=True, slots=True)
class Context:
    """The machine as the service code sees it; ``current()`` is the real one."""

    platform: str
    home: Path
    env: Mapping[str, str]
    executable: str
    uid: int
    user: str
    run: Runner = field(default=subprocess.run)
    unit_name: str = "mnemonic"
    label: str = "com.mnemonic.daemon"

    @classmethod
    def current(cls, *, platform: str | None = None, run: Runner | None = None) -> Context:
        return cls(
            platform=platform or sys.platform,
            home=Path.home(),
            env=os.environ,
            executable=os.path.abspath(sys.executable),
            uid=_uid(),
            user=current_user(os.environ),
            run=run or subprocess.run,
        )


@dataclass(frozen=True, slots=True)
class Step:
    """One outside command of a plan; ``may_fail`` for undo steps that find nothing to undo."""

    argv: tuple[str, ...]
    may_fail: bool = False

    def shell(self) -> str:
        """The command as a person would type it (for dry runs and error messages)."""
        return shlex.join(self.argv)


@dataclass(frozen=True, slots=True)
class ServiceStatus:
    """What ``service status`` and ``doctor`` report. ``None`` means "could not tell"."""

    manager: str | None
    path: Path | None
    installed: bool
    reachable: bool
    enabled: bool | None = None
    active: bool | None = None
    pid: int | None = None
    linger: bool | None = None
    detail: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "manager": self.manager,
            "path": str(self.path) if self.path else None,
            "installed": self.installed,
            "manager_reachable": self.reachable,
            "enabled": self.enabled,
            "active": self.active,
            "pid": self.pid,
            "linger": self.linger,
            "detail": self.detail,
        }


class Backend(Protocol):
    """A service manager: where its file goes, what it contains, which commands apply it."""

    manager: str

    def file_path(self) -> Path: ...

    def render(self, command: Sequence[str], environment: Mapping[str, str]) -> bytes: ...

    def unavailable_reason(self) -> str | None: ...

    def folders(self) -> list[Path]: ...

    def install_steps(self) -> list[Step]: ...

    def uninstall_steps(self) -> tuple[list[Step], list[Step]]: ...

    def restart_steps(self) -> list[Step]: ...

    def logs_hint(self) -> str: ...

    def notes(self) -> list[str]: ...

    def status(self) -> ServiceStatus: ...


def current_user(env: Mapping[str, str]) -> str:
    """The login name; ``$USER`` is often unset in containers and cron, so fall back."""
    for key in ("USER", "LOGNAME"):
        if env.get(key):
            return env[key]
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no passwd entry for this uid
        return str(_uid())


def _uid() -> int:
    # os.getuid does not exist on Windows, where doctor still has to run
    return os.getuid() if hasattr(os, "getuid") else 0


def entry_command(executable: str) -> list[str]:
    """The absolute command that starts *this* install of mnemonic.

    The ``mnemonic`` script beside the interpreter is the installed entry point of this
    very environment (venv, pipx, uv tool, Homebrew). ``shutil.which`` is not used: the
    first ``mnemonic`` on PATH may belong to another install. Without a sibling script
    (``pip install --user`` puts it elsewhere) ``python -m mnemonic`` of the running
    interpreter is exactly the code running now. The interpreter path is kept unresolved:
    a venv's ``python`` symlink is what selects the venv.
    """
    script = Path(executable).parent / "mnemonic"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [executable, "-m", "mnemonic"]


def temporary_roots(home: Path) -> list[Path]:
    """Folders whose content may vanish: the system temp folders and ``$TMPDIR``.

    A ``$TMPDIR`` that contains the home folder (someone set it to ``/`` or ``~``) is
    ignored, or every install would be refused; the fixed system folders always count.
    """
    # these paths are only compared against, never written to
    fixed = ("/tmp", "/var/tmp", "/dev/shm")  # noqa: S108
    roots = {Path(p).resolve() for p in fixed}
    configured = Path(tempfile.gettempdir()).resolve()
    if not home.resolve().is_relative_to(configured):
        roots.add(configured)
    return sorted(roots)


def temporary_reason(path: str, roots: Sequence[Path]) -> str | None:
    """Why ``path`` is in a place that gets cleaned (``None`` when it is not).

    Both the path as given and its target are checked: macOS's ``/tmp`` is a symlink,
    and a venv's ``python`` links out of the (possibly temporary) venv.
    """
    given = Path(path).absolute()
    for candidate in (given, given.resolve()):
        for root in roots:
            if candidate.is_relative_to(root):
                return f"{path} is inside the temporary folder {root}"
    text = given.as_posix()
    for marker in _EPHEMERAL_MARKERS:
        if marker in text:
            return f"{path} is inside a tool's throw-away environment ({marker.strip('/')})"
    return None


def template_path(name: str) -> Path:
    """Templates ship in the wheel as ``mnemonic/_service``; a checkout has ``service/``."""
    package_root = Path(__file__).resolve().parents[1]
    packaged = package_root / "_service" / name
    if packaged.is_file():
        return packaged
    return package_root.parent / "service" / name


def load_template(name: str) -> str:
    return template_path(name).read_text(encoding="utf-8")


def fill(template: str, values: Mapping[str, str]) -> str:
    """Replace every ``@NAME@``; a name without a value is a bug, not an empty string."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise KeyError(f"template placeholder @{name}@ has no value")
        return values[name]

    return _PLACEHOLDER.sub(value, template)


def run_step(ctx: Context, step: Step) -> subprocess.CompletedProcess[str]:
    """Run one command; a failure the step does not allow becomes a ServiceError."""
    log.debug("running %s", step.shell())
    try:
        done = ctx.run(
            list(step.argv), capture_output=True, text=True, check=False, timeout=COMMAND_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        if step.may_fail:
            return subprocess.CompletedProcess(list(step.argv), 1, "", str(exc))
        raise ServiceError(f"`{step.shell()}` could not run: {exc}", EX_SOFTWARE) from exc
    if done.returncode != 0 and not step.may_fail:
        output = (done.stderr or done.stdout or "").strip()
        raise ServiceError(
            f"`{step.shell()}` failed (exit {done.returncode}): {output}", EX_SOFTWARE
        )
    return done


def probe(ctx: Context, *argv: str) -> subprocess.CompletedProcess[str] | None:
    """Run a read-only query command; ``None`` when it cannot run at all."""
    try:
        return ctx.run(list(argv), capture_output=True, text=True, check=False, timeout=15.0)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.debug("%s could not run: %s", argv[0], exc)
        return None


def write_file(path: Path, content: bytes) -> None:
    """Write atomically (a half-written unit is worse than none), readable by the manager."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(content)
    partial.chmod(0o644)
    partial.replace(path)
