"""mnemonic as a systemd *user* unit: render the unit, install/remove it, report its state.

A user unit needs no root and runs as the user, next to the data it owns. It lives in
``$XDG_CONFIG_HOME/systemd/user`` (default ``~/.config/systemd/user``). The user manager
stops at logout unless the user has "linger", so install checks it and prints the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from mnemonic.install.common import (
    Context,
    ServiceStatus,
    Step,
    fill,
    load_template,
    probe,
)

TEMPLATE = "mnemonic.service.in"
MANAGER = "systemd"

#: ``is-system-running`` answers with one of these when a user manager is there to talk to;
#: "offline" means no manager (containers, some WSL), and a bus error means no session.
_REACHABLE_STATES = {"initializing", "starting", "running", "degraded", "maintenance", "stopping"}
_NEEDS_QUOTES = re.compile(r"[\s\"'\\;]")


def quote_word(value: str, *, expand_dollar: bool) -> str:
    """One word of a unit-file command line or assignment, exactly as systemd will read it.

    ``%`` starts a specifier everywhere and ``$`` a variable in ``ExecStart=``, so both are
    doubled; words with blanks, quotes, backslashes or ``;`` are double-quoted with C
    escapes. Newlines cannot be expressed on one unit-file line at all.
    """
    if any(ch in value for ch in "\n\r\0"):
        raise ValueError(f"a newline or NUL cannot appear in a systemd unit value: {value!r}")
    escaped = value.replace("%", "%%")
    if expand_dollar:
        escaped = escaped.replace("$", "$$")
    if value and not _NEEDS_QUOTES.search(value):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def quote_executable(path: str) -> str:
    """The program of ``ExecStart=``: systemd resolves ``%`` specifiers in it but not ``$``
    variables, and refuses outright (a fatal unit error) a path holding a quote, a
    backslash or a control character, however it is quoted."""
    if any(ch in "\"'\\\x7f" or ord(ch) < 32 for ch in path):
        raise ValueError(
            f"systemd refuses to run a program whose path contains a quote, a backslash or a "
            f"control character: {path}"
        )
    return quote_word(path, expand_dollar=False)


def exec_line(command: Sequence[str]) -> str:
    program, *args = command
    return " ".join([quote_executable(program), *(quote_word(a, expand_dollar=True) for a in args)])


def environment_lines(environment: Mapping[str, str]) -> list[str]:
    return [
        f"Environment={quote_word(f'{key}={value}', expand_dollar=False)}"
        for key, value in sorted(environment.items())
    ]


def render_unit(
    command: Sequence[str], environment: Mapping[str, str], unit_name: str = "mnemonic"
) -> str:
    """The unit file text for ``command serve`` with ``environment``: a pure function."""
    template = load_template(TEMPLATE)
    lines = environment_lines(environment)
    if not lines:
        template = template.replace("@ENVIRONMENT@\n", "")
    return fill(
        template,
        {
            "EXEC_START": exec_line([*command, "serve"]),
            "ENVIRONMENT": "\n".join(lines),
            "UNIT": unit_name,
        },
    )


def parse_linger(output: str) -> bool | None:
    """``loginctl show-user NAME -p Linger`` prints ``Linger=yes``; anything else is unknown."""
    for line in output.splitlines():
        key, _, value = line.strip().partition("=")
        if key == "Linger":
            return {"yes": True, "no": False}.get(value.strip())
    return None


class SystemdBackend:
    manager = MANAGER

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.unit = f"{ctx.unit_name}.service"

    def file_path(self) -> Path:
        config = self.ctx.env.get("XDG_CONFIG_HOME", "")
        # the XDG spec says a relative value is invalid and must be ignored
        base = Path(config) if config and Path(config).is_absolute() else self.ctx.home / ".config"
        return base / "systemd" / "user" / self.unit

    def render(self, command: Sequence[str], environment: Mapping[str, str]) -> bytes:
        return render_unit(command, environment, self.ctx.unit_name).encode("utf-8")

    def unavailable_reason(self) -> str | None:
        done = probe(self.ctx, "systemctl", "--user", "is-system-running")
        if done is None:
            return "systemctl is not installed"
        state = done.stdout.strip()
        if state in _REACHABLE_STATES:
            return None
        said = (state or done.stderr.strip() or "no answer").splitlines()[0]
        return f"no systemd user manager answers (`systemctl --user is-system-running`: {said})"

    def folders(self) -> list[Path]:
        return []

    def install_steps(self) -> list[Step]:
        # try-restart first: a running daemon picks up the new unit (and new code); then
        # enable --now starts it if it was not running. With Type=notify both return only
        # once the daemon has reported READY.
        return [
            self._ctl("daemon-reload"),
            self._ctl("try-restart", self.unit),
            self._ctl("enable", "--now", self.unit),
        ]

    def uninstall_steps(self) -> tuple[list[Step], list[Step]]:
        """Steps before removing the file, and after it."""
        before = [self._ctl("disable", "--now", self.unit, may_fail=True)]
        after = [self._ctl("daemon-reload"), self._ctl("reset-failed", self.unit, may_fail=True)]
        return before, after

    def restart_steps(self) -> list[Step]:
        return [self._ctl("restart", self.unit)]

    def logs_hint(self) -> str:
        return f"journalctl --user -u {self.unit} -e"

    def linger(self) -> bool | None:
        done = probe(self.ctx, "loginctl", "show-user", self.ctx.user, "-p", "Linger")
        if done is None or done.returncode != 0:
            return None
        return parse_linger(done.stdout)

    def notes(self) -> list[str]:
        if self.linger() is False:
            return [linger_note(self.ctx.user)]
        return []

    def status(self) -> ServiceStatus:
        path = self.file_path()
        reason = self.unavailable_reason()
        if reason is not None:
            return ServiceStatus(MANAGER, path, path.is_file(), reachable=False, detail=reason)
        enabled = probe(self.ctx, "systemctl", "--user", "is-enabled", self.unit)
        active = probe(self.ctx, "systemctl", "--user", "is-active", self.unit)
        pid = probe(self.ctx, "systemctl", "--user", "show", "-p", "MainPID", "--value", self.unit)
        active_state = active.stdout.strip() if active else "unknown"
        return ServiceStatus(
            MANAGER,
            path,
            path.is_file(),
            reachable=True,
            enabled=(enabled.stdout.strip() == "enabled") if enabled else None,
            active=active_state == "active",
            pid=_positive_int(pid.stdout) if pid else None,
            linger=self.linger(),
            detail=active_state,
        )

    def _ctl(self, *args: str, may_fail: bool = False) -> Step:
        return Step(("systemctl", "--user", *args), may_fail=may_fail)


def linger_note(user: str) -> str:
    return (
        f"linger is off for {user}: your systemd user manager, and mnemonic with it, stops "
        f"when your last session ends (and does not start at boot). Fix: loginctl enable-linger "
        f"{user}"
    )


def _positive_int(text: str) -> int | None:
    try:
        value = int(text.strip())
    except ValueError:
        return None
    return value if value > 0 else None
