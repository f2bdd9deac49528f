"""mnemonic as a macOS LaunchAgent in the user's GUI domain (``gui/<uid>``).

The plist is made from the template with ``plistlib`` rather than by pasting text: the
template stays a readable, commented plist in ``service/``, and every machine-specific
value (paths with ``&`` or ``<``, environment variables) is set as data, so plistlib does
all the escaping and the result is always a well-formed property list.
"""

from __future__ import annotations

import plistlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mnemonic.install.common import Context, ServiceStatus, Step, load_template, probe

TEMPLATE = "com.mnemonic.daemon.plist.in"
MANAGER = "launchd"

_WHOLE = re.compile(r"^@([A-Z_]+)@$")
_INNER = re.compile(r"@([A-Z_]+)@")
_STATE = re.compile(r"^\s*state = (\S+)", re.MULTILINE)
_PID = re.compile(r"^\s*pid = (\d+)", re.MULTILINE)


def substitute(node: Any, values: Mapping[str, Any]) -> Any:
    """Replace placeholders in parsed plist data.

    A string that is exactly ``@NAME@`` becomes ``values[NAME]`` whatever its type (an
    array, a dictionary); a dictionary entry whose replacement is ``None`` is dropped.
    ``@NAME@`` inside a longer string takes a string value.
    """
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, child in node.items():
            replaced = substitute(child, values)
            if replaced is None:
                continue
            out[key] = replaced
        return out
    if isinstance(node, list):
        return [substitute(child, values) for child in node]
    if isinstance(node, str):
        whole = _WHOLE.match(node)
        if whole:
            return _value(values, whole.group(1))
        return _INNER.sub(lambda m: str(_value(values, m.group(1))), node)
    return node


def _value(values: Mapping[str, Any], name: str) -> Any:
    if name not in values:
        raise KeyError(f"template placeholder @{name}@ has no value")
    return values[name]


def render_plist(
    command: Sequence[str],
    environment: Mapping[str, str],
    log_dir: Path,
    label: str = "com.mnemonic.daemon",
) -> bytes:
    """The LaunchAgent plist for ``command serve``: a pure function of its arguments."""
    template = plistlib.loads(load_template(TEMPLATE).encode("utf-8"))
    data = substitute(
        template,
        {
            "LABEL": label,
            "PROGRAM_ARGUMENTS": [*command, "serve"],
            "ENVIRONMENT": dict(sorted(environment.items())) or None,
            "LOG_DIR": str(log_dir),
        },
    )
    return plistlib.dumps(data, fmt=plistlib.FMT_XML, sort_keys=False)


def parse_print(output: str) -> tuple[str | None, int | None]:
    """(state, pid) from ``launchctl print gui/<uid>/<label>``."""
    state = _STATE.search(output)
    pid = _PID.search(output)
    return (state.group(1) if state else None, int(pid.group(1)) if pid else None)


def parse_disabled(output: str, label: str) -> bool:
    """Is ``label`` disabled in ``launchctl print-disabled gui/<uid>``?

    Newer macOS prints ``"label" => disabled``, older releases ``"label" => true``.
    """
    for line in output.splitlines():
        name, arrow, value = line.strip().partition("=>")
        if arrow and name.strip().strip('"') == label:
            return value.strip() in {"disabled", "true"}
    return False


class LaunchdBackend:
    manager = MANAGER

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.domain = f"gui/{ctx.uid}"
        self.target = f"{self.domain}/{ctx.label}"

    def file_path(self) -> Path:
        return self.ctx.home / "Library" / "LaunchAgents" / f"{self.ctx.label}.plist"

    def log_dir(self) -> Path:
        return self.ctx.home / "Library" / "Logs" / "mnemonic"

    def render(self, command: Sequence[str], environment: Mapping[str, str]) -> bytes:
        return render_plist(command, environment, self.log_dir(), self.ctx.label)

    def unavailable_reason(self) -> str | None:
        done = probe(self.ctx, "launchctl", "print", self.domain)
        if done is None:
            return "launchctl is not available"
        if done.returncode != 0:
            return (
                f"no GUI login session for uid {self.ctx.uid} (`launchctl print {self.domain}` "
                "failed): a LaunchAgent needs you logged in at the desktop"
            )
        return None

    def folders(self) -> list[Path]:
        # launchd opens StandardOutPath/StandardErrorPath but does not create their folder
        return [self.log_dir()]

    def install_steps(self) -> list[Step]:
        # bootout first so a changed plist (or new code) takes effect: bootstrap refuses a
        # label that is already loaded. enable clears an earlier `launchctl disable`, which
        # would make bootstrap fail. RunAtLoad then starts the daemon.
        return [
            Step(("launchctl", "bootout", self.target), may_fail=True),
            Step(("launchctl", "enable", self.target)),
            Step(("launchctl", "bootstrap", self.domain, str(self.file_path()))),
        ]

    def uninstall_steps(self) -> tuple[list[Step], list[Step]]:
        """Steps before removing the file, and after it (none: bootout unloaded it)."""
        return [Step(("launchctl", "bootout", self.target), may_fail=True)], []

    def restart_steps(self) -> list[Step]:
        # -k: stop the running instance, then start it again (kickstart alone is a no-op
        # for a running service)
        return [Step(("launchctl", "kickstart", "-k", self.target))]

    def logs_hint(self) -> str:
        return f"tail {self.log_dir() / 'launchd.stderr.log'}"

    def notes(self) -> list[str]:
        return []

    def status(self) -> ServiceStatus:
        path = self.file_path()
        reason = self.unavailable_reason()
        if reason is not None:
            return ServiceStatus(MANAGER, path, path.is_file(), reachable=False, detail=reason)
        loaded = probe(self.ctx, "launchctl", "print", self.target)
        disabled = probe(self.ctx, "launchctl", "print-disabled", self.domain)
        state, pid = (None, None)
        if loaded is not None and loaded.returncode == 0:
            state, pid = parse_print(loaded.stdout)
        is_disabled = parse_disabled(disabled.stdout, self.ctx.label) if disabled else False
        return ServiceStatus(
            MANAGER,
            path,
            path.is_file(),
            reachable=True,
            enabled=path.is_file() and not is_disabled,
            active=state == "running",
            pid=pid,
            detail=state or "not loaded",
        )
