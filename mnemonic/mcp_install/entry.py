"""The command every client runs to start ``mnemonic mcp`` over stdio, and the parts of our
entry that we own inside a client's file.

Why an absolute path to *this* install rather than a bare ``mnemonic``: GUI clients
(Claude Desktop, VS Code or Cursor started from a dock) do not inherit the shell's PATH, so
a bare name fails there; and ``shutil.which("mnemonic")`` may find another install (an
older pipx copy, a second venv) whose code and data folder differ from the one the user
just ran. The rule is the service installer's (``mnemonic.install.common.entry_command``):
the ``mnemonic`` script that sits beside the running interpreter (venv, pipx, uv tool,
Homebrew), else ``<python> -m mnemonic`` with the running interpreter, which is exactly
the code running now. The interpreter path is not resolved: a venv's ``python`` symlink is
what selects the venv.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping
from typing import Any

from mnemonic.install.common import entry_command, temporary_reason, temporary_roots
from mnemonic.mcp_install.model import InstallContext, Launch

HOME_VARIABLE = "MNEMONIC_HOME"
MANAGED_ENV = (HOME_VARIABLE,)
"""Environment keys of our entry that install sets or removes; any other key a user added
to our entry's ``env`` is kept."""


def launch(ctx: InstallContext) -> Launch:
    """``mnemonic mcp`` for this install, with ``MNEMONIC_HOME`` (absolute) when set."""
    argv = entry_command(ctx.executable)
    env: dict[str, str] = {}
    home = ctx.env_path(HOME_VARIABLE)
    if home is not None:
        env[HOME_VARIABLE] = str(home if home.is_absolute() else (ctx.cwd / home))
    return Launch(command=argv[0], args=(*argv[1:], "mcp"), env=env)


def launch_warnings(ctx: InstallContext, command: str) -> list[str]:
    """Why the entry may stop working later (it points into a throw-away environment)."""
    reason = temporary_reason(command, temporary_roots(ctx.home))
    if reason is None:
        return []
    return [
        f"{reason}: the client will fail to start mnemonic once it is cleaned; "
        "install mnemonic for good (pipx install, uv tool install) and run this again"
    ]


def stdio_entry(target: Launch, *, with_type: bool) -> dict[str, Any]:
    """The usual ``{"type"?, "command", "args", "env"?}`` entry of the JSON clients."""
    entry: dict[str, Any] = {}
    if with_type:
        entry["type"] = "stdio"
    entry["command"] = target.command
    entry["args"] = list(target.args)
    if target.env:
        entry["env"] = dict(target.env)
    return entry


def merge_entry(existing: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> dict[str, Any]:
    """Our entry updated in place: the keys we write (type, command, args, our env keys)
    take the desired values; anything else the user put there (a timeout, an allow list,
    other environment variables) stays, in its order."""
    result: dict[str, Any] = dict(existing or {})
    for key, value in desired.items():
        if key != "env":
            result[key] = value
    old_env = result.get("env")
    env: dict[str, Any] = dict(old_env) if isinstance(old_env, Mapping) else {}
    wanted = desired.get("env") or {}
    for key in MANAGED_ENV:
        if key in wanted:
            env[key] = wanted[key]
        else:
            env.pop(key, None)
    if env:
        result["env"] = env
    else:
        result.pop("env", None)
    return result


def shell_join(ctx: InstallContext, argv: list[str]) -> str:
    """A command line as the user's shell wants it (POSIX quoting; cmd.exe's on Windows)."""
    if ctx.platform == "win32":
        return subprocess.list2cmdline(argv)
    return shlex.join(argv)


def env_flags(flag: str, env: Mapping[str, str]) -> list[str]:
    """``--env KEY=VALUE`` for each variable (the form ``claude``/``codex mcp add`` take)."""
    flags: list[str] = []
    for key, value in env.items():
        flags += [flag, f"{key}={value}"]
    return flags
