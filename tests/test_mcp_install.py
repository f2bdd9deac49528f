"""``mnemonic mcp install|uninstall`` as a library: every client and scope round-trips a
real config file in tmp_path that already holds other servers and unrelated keys; bad
files are refused and left byte-for-byte alone; dry runs write nothing; the launch
command, paths per platform and the client CLI commands are what the clients expect.

Nothing here touches the real home: every path goes through an ``InstallContext`` whose
home, environment and working folder are inside tmp_path.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from mnemonic.exits import EX_DATAERR, EX_SOFTWARE, EX_USAGE
from mnemonic.mcp_install import (
    Client,
    InstallContext,
    InstallError,
    Scope,
    files,
    install,
    jsondoc,
    resolve,
    snippet,
    uninstall,
)
from mnemonic.mcp_install.entry import merge_entry

NOW = datetime(2026, 5, 1, 12, 30, 45, tzinfo=UTC)
COMBOS = [
    (Client.CLAUDE_CODE, Scope.USER),
    (Client.CLAUDE_CODE, Scope.PROJECT),
    (Client.CLAUDE_DESKTOP, Scope.USER),
    (Client.CURSOR, Scope.USER),
    (Client.CURSOR, Scope.PROJECT),
    (Client.VSCODE, Scope.USER),
    (Client.VSCODE, Scope.PROJECT),
    (Client.CODEX, Scope.USER),
    (Client.CODEX, Scope.PROJECT),
]

TOML_SEED = """# my codex settings
model = "o3"  # the default model

[mcp_servers.other]
command = "npx"
args = ["-y", "other-server"]
startup_timeout_sec = 20

[profiles.fast]
model = "o4-mini"
"""


def make_ctx(tmp_path: Path, env: dict[str, str] | None = None, **kw: Any) -> InstallContext:
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir(exist_ok=True)
    project.mkdir(exist_ok=True)
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.touch()
    values: dict[str, Any] = {
        "home": home,
        "env": env if env is not None else {"MNEMONIC_HOME": str(tmp_path / "data")},
        "platform": "linux",
        "executable": str(python),
        "cwd": project,
        "now": lambda: NOW,
    }
    values.update(kw)
    return InstallContext(**values)


def container_key(client: Client) -> str:
    return {Client.VSCODE: "servers", Client.CODEX: "mcp_servers"}.get(client, "mcpServers")


def seed(path: Path, client: Client) -> bytes:
    """A config file with another server and unrelated keys (and non-ASCII text)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if client is Client.CODEX:
        text = TOML_SEED
    else:
        doc = {
            "theme": "dark — café",
            container_key(client): {"other": {"command": "npx", "args": ["-y", "other-server"]}},
            "projects": {"/src/app": {"allowedTools": [], "history": [1, 2.5, True, None]}},
        }
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path.read_bytes()


def load(path: Path, client: Client) -> dict[str, Any]:
    if client is Client.CODEX:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + files.BACKUP_MARK + "*"))


# --- round trips --------------------------------------------------------------------------


@pytest.mark.parametrize(("client", "scope"), COMBOS, ids=str)
def test_round_trip_keeps_everything_else(tmp_path: Path, client: Client, scope: Scope) -> None:
    ctx = make_ctx(tmp_path)
    target, _ = resolve(ctx, client, scope)
    assert tmp_path in target.path.parents  # never the real home
    original = seed(target.path, client)
    before = load(target.path, client)
    key = container_key(client)

    first = install(ctx, client, scope)
    assert first.action == "added" and not first.dry_run
    after = load(target.path, client)
    assert after[key]["mnemonic"] == target.entry
    assert after[key]["other"] == before[key]["other"]
    assert {k: v for k, v in after.items() if k != key} == {
        k: v for k, v in before.items() if k != key
    }
    assert first.backup is not None and first.backup.read_bytes() == original
    assert stat.S_IMODE(first.backup.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.path.stat().st_mode) == 0o600  # mode kept
    assert "+" in first.diff and "mnemonic" in first.diff

    installed = target.path.read_bytes()
    second = install(ctx, client, scope)
    assert second.action == "unchanged" and second.backup is None and second.diff == ""
    assert target.path.read_bytes() == installed
    assert len(backups(target.path)) == 1  # an idempotent install leaves no clutter

    removed = uninstall(ctx, client, scope)
    assert removed.action == "removed"
    assert removed.backup is not None and removed.backup.read_bytes() == installed
    assert load(target.path, client) == before
    if client is Client.CODEX:  # tomlkit keeps comments and layout: the very same text
        assert target.path.read_bytes() == original
    assert uninstall(ctx, client, scope).action == "absent"
    assert [p.name for p in tmp_path.rglob("*.tmp")] == []  # no temp file left behind


@pytest.mark.parametrize(("client", "scope"), COMBOS, ids=str)
def test_install_creates_a_missing_file(tmp_path: Path, client: Client, scope: Scope) -> None:
    ctx = make_ctx(tmp_path)
    target, _ = resolve(ctx, client, scope)
    assert not target.path.exists()
    result = install(ctx, client, scope)
    assert result.action == "added" and result.backup is None
    assert load(target.path, client) == {container_key(client): {"mnemonic": target.entry}}
    assert install(ctx, client, scope).action == "unchanged"


def test_uninstall_without_a_file_is_absent_and_creates_nothing(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    result = uninstall(ctx, Client.CURSOR, Scope.USER)
    assert result.action == "absent"
    assert not (ctx.home / ".cursor").exists()


# --- refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "text", "words"),
    [
        (Client.CURSOR, '{"mcpServers": {"a": {"command": "x"}}', "not valid JSON (line 1"),
        (Client.VSCODE, '{\n  // mine\n  "servers": {},\n}\n', "comments or trailing commas"),
        (Client.CURSOR, '{"mcpServers": {}, "mcpServers": {}}', "names the key 'mcpServers' twice"),
        (Client.CURSOR, "[1, 2]", "not an object"),
        (Client.CURSOR, '{"mcpServers": ["x"]}', "mcpServers is not an object"),
        (Client.CURSOR, '{"mcpServers": {"mnemonic": "x"}}', "entry is not an object"),
        (Client.CODEX, "[mcp_servers\ncommand = 1\n", "not valid TOML"),
        (Client.CODEX, 'mcp_servers = "x"\n', "mcp_servers is not a table"),
    ],
)
def test_a_file_it_cannot_parse_is_refused_and_untouched(
    tmp_path: Path, client: Client, text: str, words: str
) -> None:
    ctx = make_ctx(tmp_path)
    target, _ = resolve(ctx, client, Scope.USER)
    target.path.parent.mkdir(parents=True, exist_ok=True)
    target.path.write_text(text, encoding="utf-8")
    # uninstall removes a malformed "mnemonic" key (it is ours); install refuses to guess
    runs = (install,) if "entry is not" in words else (install, uninstall)
    for run in runs:
        with pytest.raises(InstallError) as refused:
            run(ctx, client, Scope.USER)
        assert refused.value.exit_code == EX_DATAERR
        assert words in refused.value.message and "left untouched" in refused.value.message
        assert refused.value.target is not None and refused.value.target.path == target.path
        assert target.path.read_text(encoding="utf-8") == text
        assert backups(target.path) == []


def test_a_jsonc_refusal_still_gives_the_entry_and_the_code_command(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    target, _ = resolve(ctx, Client.VSCODE, Scope.USER)
    target.path.parent.mkdir(parents=True)
    target.path.write_text('{ /* mine */ "servers": {} }', encoding="utf-8")
    with pytest.raises(InstallError) as refused:
        install(ctx, Client.VSCODE, Scope.USER)
    shown = refused.value.target
    assert shown is not None and shown.install_command is not None
    assert json.loads(snippet(shown)) == {"servers": {"mnemonic": shown.entry}}
    assert shown.install_command.startswith("code --add-mcp ")


def test_a_scope_the_client_does_not_have_is_a_usage_error(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    with pytest.raises(InstallError) as refused:
        install(ctx, Client.CLAUDE_DESKTOP, Scope.PROJECT)
    assert refused.value.exit_code == EX_USAGE
    with pytest.raises(InstallError) as missing:
        install(ctx, Client.CURSOR, Scope.PROJECT, project_dir=tmp_path / "nowhere")
    assert missing.value.exit_code == EX_USAGE and "does not exist" in missing.value.message
    assert not (tmp_path / "nowhere").exists()


def test_a_file_changed_by_another_writer_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / ".claude.json"
    path.write_text('{"a": 1}\n', encoding="utf-8")
    snapshot = files.read(path)
    path.write_text('{"a": 2}\n', encoding="utf-8")  # Claude Code saved meanwhile
    with pytest.raises(InstallError) as refused:
        files.write_atomic(snapshot, '{"mine": true}\n')
    assert refused.value.exit_code == EX_SOFTWARE and "changed while" in refused.value.message
    assert path.read_text(encoding="utf-8") == '{"a": 2}\n'
    assert [p.name for p in tmp_path.iterdir()] == [".claude.json"]


# --- dry run ------------------------------------------------------------------------------


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    target, _ = resolve(ctx, Client.CLAUDE_CODE, Scope.PROJECT)
    planned = install(ctx, Client.CLAUDE_CODE, Scope.PROJECT, dry_run=True)
    assert planned.dry_run and planned.action == "added" and planned.backup is None
    assert not target.path.exists()
    assert '+    "mnemonic": {' in planned.diff and planned.diff.startswith("--- /dev/null")

    original = seed(target.path, Client.CLAUDE_CODE)
    before = sorted(p.name for p in target.path.parent.iterdir())
    assert install(ctx, Client.CLAUDE_CODE, Scope.PROJECT, dry_run=True).action == "added"
    install(ctx, Client.CLAUDE_CODE, Scope.PROJECT)
    installed = target.path.read_bytes()
    gone = uninstall(ctx, Client.CLAUDE_CODE, Scope.PROJECT, dry_run=True)
    assert gone.action == "removed" and '-    "mnemonic": {' in gone.diff
    assert target.path.read_bytes() == installed != original
    assert len(sorted(p.name for p in target.path.parent.iterdir())) == len(before) + 1


# --- updates keep what the user added -----------------------------------------------------


def test_update_keeps_user_keys_and_drops_a_stale_home(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, env={})  # MNEMONIC_HOME not set now
    target, _ = resolve(ctx, Client.CURSOR, Scope.USER)
    target.path.parent.mkdir(parents=True)
    old = {
        "command": "/old/mnemonic",
        "args": ["mcp"],
        "env": {"MNEMONIC_HOME": "/old/home", "HTTPS_PROXY": "http://proxy"},
        "disabled": False,
    }
    target.path.write_text(json.dumps({"mcpServers": {"mnemonic": old}}), encoding="utf-8")
    result = install(ctx, Client.CURSOR, Scope.USER)
    assert result.action == "updated"
    entry = json.loads(target.path.read_text(encoding="utf-8"))["mcpServers"]["mnemonic"]
    assert entry == {
        "command": target.entry["command"],
        "args": target.entry["args"],
        "env": {"HTTPS_PROXY": "http://proxy"},
        "disabled": False,
    }
    assert install(ctx, Client.CURSOR, Scope.USER).action == "unchanged"


def test_codex_update_in_place_keeps_comments_inside_our_table(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    target, _ = resolve(ctx, Client.CODEX, Scope.USER)
    target.path.parent.mkdir(parents=True)
    target.path.write_text(
        '[mcp_servers.mnemonic]\n# installed by hand\ncommand = "/old"  # old path\n'
        'args = ["mcp"]\nstartup_timeout_sec = 30\n\n[mcp_servers.mnemonic.env]\nX = "1"\n',
        encoding="utf-8",
    )
    assert install(ctx, Client.CODEX, Scope.USER).action == "updated"
    text = target.path.read_text(encoding="utf-8")
    assert "# installed by hand" in text and "startup_timeout_sec = 30" in text
    entry = tomllib.loads(text)["mcp_servers"]["mnemonic"]
    assert entry["command"] == target.entry["command"]
    assert entry["env"] == {"X": "1", "MNEMONIC_HOME": str(tmp_path / "data")}
    assert install(ctx, Client.CODEX, Scope.USER).action == "unchanged"


def test_merge_entry_table() -> None:
    desired = {"type": "stdio", "command": "/m", "args": ["mcp"], "env": {"MNEMONIC_HOME": "/h"}}
    assert merge_entry(None, desired) == desired
    assert merge_entry({"command": "/x", "timeout": 5}, {"command": "/m", "args": []}) == {
        "command": "/m",
        "timeout": 5,
        "args": [],
    }
    assert merge_entry({"env": {"MNEMONIC_HOME": "/h"}}, {"command": "/m"}) == {"command": "/m"}
    assert merge_entry({"env": {"A": "1"}}, desired)["env"] == {"A": "1", "MNEMONIC_HOME": "/h"}


# --- the launch command and environment ----------------------------------------------------


def test_launch_uses_the_script_beside_the_interpreter_else_python_m(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, env={})
    target, warnings = resolve(ctx, Client.CLAUDE_DESKTOP, Scope.USER)
    assert target.entry == {"command": ctx.executable, "args": ["-m", "mnemonic", "mcp"]}
    assert "env" not in target.entry  # MNEMONIC_HOME only when it is set
    assert warnings and "temporary folder" in warnings[0]  # tmp_path is under /tmp

    script = Path(ctx.executable).parent / "mnemonic"
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    target, _ = resolve(ctx, Client.CLAUDE_DESKTOP, Scope.USER)
    assert target.entry == {"command": str(script), "args": ["mcp"]}
    assert os.path.isabs(target.entry["command"])


def test_a_relative_mnemonic_home_is_made_absolute(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, env={"MNEMONIC_HOME": "data"})
    target, _ = resolve(ctx, Client.CURSOR, Scope.USER)
    assert target.entry["env"] == {"MNEMONIC_HOME": str(ctx.cwd / "data")}


# --- where each client keeps its file -------------------------------------------------------


@pytest.mark.parametrize(
    ("client", "platform", "env", "relative"),
    [
        (Client.CLAUDE_DESKTOP, "darwin", {}, "home/Library/Application Support/Claude"),
        (Client.CLAUDE_DESKTOP, "win32", {"APPDATA": "{t}/roaming"}, "roaming/Claude"),
        (Client.CLAUDE_DESKTOP, "win32", {}, "home/AppData/Roaming/Claude"),
        (Client.CLAUDE_DESKTOP, "linux", {}, "home/.config/Claude"),
        (Client.CLAUDE_DESKTOP, "linux", {"XDG_CONFIG_HOME": "{t}/xdg"}, "xdg/Claude"),
        (Client.VSCODE, "darwin", {}, "home/Library/Application Support/Code/User"),
        (Client.VSCODE, "win32", {"APPDATA": "{t}/roaming"}, "roaming/Code/User"),
        (Client.VSCODE, "linux", {}, "home/.config/Code/User"),
        (Client.CODEX, "linux", {}, "home/.codex"),
        (Client.CODEX, "linux", {"CODEX_HOME": "{t}/codex"}, "codex"),
        (Client.CODEX, "linux", {"CODEX_HOME": "~/cx"}, "home/cx"),
        (Client.CURSOR, "win32", {}, "home/.cursor"),
        (Client.CLAUDE_CODE, "darwin", {}, "home"),
    ],
)
def test_user_file_locations(
    tmp_path: Path, client: Client, platform: str, env: dict[str, str], relative: str
) -> None:
    ctx = make_ctx(
        tmp_path, env={k: v.format(t=tmp_path) for k, v in env.items()}, platform=platform
    )
    target, _ = resolve(ctx, client, Scope.USER)
    assert target.path.parent == tmp_path / relative
    assert (
        target.path.name
        == {
            Client.CLAUDE_DESKTOP: "claude_desktop_config.json",
            Client.VSCODE: "mcp.json",
            Client.CODEX: "config.toml",
            Client.CURSOR: "mcp.json",
            Client.CLAUDE_CODE: ".claude.json",
        }[client]
    )


@pytest.mark.parametrize(
    ("client", "relative"),
    [
        (Client.CLAUDE_CODE, ".mcp.json"),
        (Client.CURSOR, ".cursor/mcp.json"),
        (Client.VSCODE, ".vscode/mcp.json"),
        (Client.CODEX, ".codex/config.toml"),
    ],
)
def test_project_file_locations(tmp_path: Path, client: Client, relative: str) -> None:
    ctx = make_ctx(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    assert resolve(ctx, client, Scope.PROJECT)[0].path == ctx.cwd / relative
    assert resolve(ctx, client, Scope.PROJECT, other)[0].path == other / relative


# --- the clients' own commands ---------------------------------------------------------------


def test_equivalent_cli_commands(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, env={"MNEMONIC_HOME": str(tmp_path / "my data")})
    home = str(tmp_path / "my data")
    claude, _ = resolve(ctx, Client.CLAUDE_CODE, Scope.PROJECT)
    argv = [ctx.executable, "-m", "mnemonic", "mcp"]
    assert claude.install_command is not None and claude.uninstall_command is not None
    assert shlex.split(claude.install_command) == [
        "claude", "mcp", "add", "--transport", "stdio", "--scope", "project",
        "--env", f"MNEMONIC_HOME={home}", "mnemonic", "--", *argv,
    ]  # fmt: skip
    assert shlex.split(claude.uninstall_command) == [
        "claude", "mcp", "remove", "--scope", "project", "mnemonic",
    ]  # fmt: skip
    codex, _ = resolve(ctx, Client.CODEX, Scope.USER)
    assert codex.install_command is not None
    assert shlex.split(codex.install_command) == [
        "codex", "mcp", "add", "--env", f"MNEMONIC_HOME={home}", "mnemonic", "--", *argv,
    ]  # fmt: skip
    assert resolve(ctx, Client.CODEX, Scope.PROJECT)[0].install_command is None
    vscode, _ = resolve(ctx, Client.VSCODE, Scope.USER)
    assert vscode.install_command is not None
    code, flag, spec = shlex.split(vscode.install_command)
    assert (code, flag) == ("code", "--add-mcp")
    assert json.loads(spec) == {"name": "mnemonic", **vscode.entry}
    assert vscode.entry["type"] == "stdio"
    for client in (Client.CURSOR, Client.CLAUDE_DESKTOP):
        assert resolve(ctx, client, Scope.USER)[0].install_command is None


# --- file handling ------------------------------------------------------------------------


def test_json_layout_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    for original in ('{\n    "a": 1\n}', '{\r\n\t"a": 1\r\n}\r\n'):
        text, action = jsondoc.install(path, original, ("mcpServers",), {"command": "/m"})
        assert action == "added"
        assert text.endswith("}\r\n") == original.endswith("\r\n")
        assert text.endswith("}") == original.endswith("}")
        indent = "    " if "    " in original else "\t"
        assert f'\n{indent}"a": 1' in text.replace("\r\n", "\n")
        assert f'\n{indent}{indent}"mnemonic": {{' in text.replace("\r\n", "\n")


def test_a_symlinked_config_is_written_through(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    real = tmp_path / "dotfiles" / "claude.json"
    real.parent.mkdir()
    real.write_text('{"theme": "light"}\n', encoding="utf-8")
    link = ctx.home / ".claude.json"
    link.symlink_to(real)
    result = install(ctx, Client.CLAUDE_CODE, Scope.USER)
    assert link.is_symlink() and link.resolve() == real
    assert json.loads(real.read_text(encoding="utf-8"))["theme"] == "light"
    assert "mnemonic" in json.loads(real.read_text(encoding="utf-8"))["mcpServers"]
    assert result.backup is not None and result.backup.parent == real.parent


def test_backup_names_do_not_collide(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("{}", encoding="utf-8")
    first = files.backup(files.read(path), NOW)
    second = files.backup(files.read(path), NOW)
    assert first.name == "x.json.mnemonic-backup-20260501T123045Z"
    assert second.name == "x.json.mnemonic-backup-20260501T123045Z-1"
    assert first.read_bytes() == second.read_bytes() == b"{}"
