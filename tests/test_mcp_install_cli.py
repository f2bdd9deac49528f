"""``mnemonic mcp install|uninstall`` through the command line: exit codes, ``--json``,
``--dry-run`` and the human output, with HOME and every client location variable pointed
into tmp_path.

The commands are registered with ``register_install`` on an ``mcp`` group, the way
``mnemonic.cli.mcp`` does; when the real ``mnemonic`` app carries them, the last test
runs them through the console entry point (the ``run`` fixture of tests/test_cli_*.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from support.cli import Run
from typer.testing import CliRunner

from mnemonic.cli.mcp_install import describe, register_install
from mnemonic.exits import EX_DATAERR, EX_USAGE
from mnemonic.mcp_install import Client, Result, Scope, Target

CLEARED = ("XDG_CONFIG_HOME", "CODEX_HOME", "APPDATA")


def cli_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """mnemonic (test harness)."""

    group = typer.Typer()
    register_install(group)
    app.add_typer(group, name="mcp")
    return app


def invoke(env: dict[str, str | None], *args: str) -> tuple[int, str, str]:
    done = CliRunner().invoke(cli_app(), list(args), env=env)
    return done.exit_code, done.stdout, done.stderr


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str | None]:
    (tmp_path / "home").mkdir()
    (tmp_path / "project").mkdir()
    values: dict[str, str | None] = {name: None for name in CLEARED}
    values.update({"HOME": str(tmp_path / "home"), "MNEMONIC_HOME": str(tmp_path / "data")})
    return values


def test_install_json_then_unchanged_then_uninstall(
    tmp_path: Path, env: dict[str, str | None]
) -> None:
    config = tmp_path / "home" / ".cursor" / "mcp.json"
    config.parent.mkdir()
    original = '{\n  "mcpServers": {\n    "other": {"command": "npx"}\n  }\n}\n'
    config.write_text(original, encoding="utf-8")

    code, out, _ = invoke(env, "mcp", "install", "--client", "cursor", "--json")
    assert code == 0
    added = json.loads(out)
    assert added["ok"] is True and added["action"] == "added"
    assert (added["client"], added["scope"], added["path"]) == ("cursor", "user", str(config))
    assert added["command"] is None  # Cursor has no CLI to add servers
    assert Path(added["backup"]).read_text(encoding="utf-8") == original
    assert added["entry"]["args"][-1] == "mcp"
    assert added["entry"]["env"] == {"MNEMONIC_HOME": str(tmp_path / "data")}
    servers = json.loads(config.read_text(encoding="utf-8"))["mcpServers"]
    assert set(servers) == {"other", "mnemonic"}

    code, out, _ = invoke(env, "mcp", "install", "--client", "cursor", "--json")
    assert code == 0 and json.loads(out)["action"] == "unchanged"
    assert json.loads(out)["backup"] is None

    code, out, _ = invoke(env, "mcp", "uninstall", "--client", "cursor", "--json")
    assert code == 0 and json.loads(out)["action"] == "removed"
    assert set(json.loads(config.read_text(encoding="utf-8"))["mcpServers"]) == {"other"}
    code, out, _ = invoke(env, "mcp", "uninstall", "--client", "cursor", "--json")
    assert code == 0 and json.loads(out)["action"] == "absent"


def test_project_scope_with_project_dir_and_the_claude_command(
    tmp_path: Path, env: dict[str, str | None]
) -> None:
    project = tmp_path / "project"
    code, out, err = invoke(
        env, "mcp", "install", "--client", "claude-code", "--scope", "project",
        "--project-dir", str(project),
    )  # fmt: skip
    assert code == 0, err
    assert f"added mnemonic to Claude Code (project scope): {project / '.mcp.json'}" in out
    assert "same as: claude mcp add --transport stdio --scope project" in out
    assert "approve" in err  # the note about .mcp.json approval goes to stderr
    assert "mnemonic" in json.loads((project / ".mcp.json").read_text())["mcpServers"]


def test_dry_run_prints_the_diff_and_writes_nothing(
    tmp_path: Path, env: dict[str, str | None]
) -> None:
    code, out, _ = invoke(env, "mcp", "install", "--client", "codex", "--dry-run")
    assert code == 0
    config = tmp_path / "home" / ".codex" / "config.toml"
    assert out.startswith(f"# would add mnemonic to Codex (user scope): {config}\n")
    assert "+[mcp_servers.mnemonic]" in out
    assert "or, with the client's own CLI: codex mcp add --env MNEMONIC_HOME=" in out
    assert not (tmp_path / "home" / ".codex").exists()
    code, out, _ = invoke(env, "mcp", "install", "--client", "codex", "--dry-run", "--json")
    shown = json.loads(out)
    assert shown["dry_run"] is True and shown["action"] == "added" and shown["backup"] is None
    assert "+[mcp_servers.mnemonic]" in shown["diff"]
    assert list((tmp_path / "home").iterdir()) == []


def test_an_invalid_file_exits_65_untouched_and_shows_the_entry(
    tmp_path: Path, env: dict[str, str | None]
) -> None:
    config = tmp_path / "project" / ".vscode" / "mcp.json"
    config.parent.mkdir()
    text = '{\n  // my servers\n  "servers": {}\n}\n'
    config.write_text(text, encoding="utf-8")
    args = ["mcp", "install", "--client", "vscode", "--scope", "project"]
    code, out, err = invoke(env, *args, "--project-dir", str(config.parent.parent))
    assert code == EX_DATAERR
    assert out == ""
    assert "comments or trailing commas" in err and '"servers": {' in err
    assert config.read_text(encoding="utf-8") == text
    assert sorted(p.name for p in config.parent.iterdir()) == ["mcp.json"]
    code, out, _ = invoke(env, *args, "--project-dir", str(config.parent.parent), "--json")
    failed = json.loads(out)
    assert code == EX_DATAERR and failed["ok"] is False and failed["exit_code"] == EX_DATAERR
    assert failed["path"] == str(config) and failed["entry"]["type"] == "stdio"


def test_usage_errors(env: dict[str, str | None]) -> None:
    code, _, err = invoke(env, "mcp", "install", "--client", "claude-desktop", "--scope", "project")
    assert code == EX_USAGE and "no project scope" in err
    code, _, _ = invoke(env, "mcp", "install", "--client", "notepad")
    assert code == 2  # click's usage error; the real entry point maps it to 64


def test_describe_lines() -> None:
    target = Target(Client.VSCODE, Scope.USER, Path("/u/mcp.json"), "json", ("servers",), {})
    assert describe(Result(target, "added", False)) == (
        "added mnemonic to VS Code (user scope): /u/mcp.json"
    )
    assert describe(Result(target, "added", True)).startswith("would add mnemonic to VS Code")
    assert describe(Result(target, "removed", True)).startswith("would remove mnemonic from")
    assert "nothing changed" in describe(Result(target, "unchanged", True))
    assert describe(Result(target, "absent", False)) == (
        "mnemonic is not in VS Code (user scope), nothing changed: /u/mcp.json"
    )


def test_through_the_mnemonic_entry_point(
    tmp_path: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mnemonic.cli.main import app

    command = typer.main.get_command(app)
    mcp = getattr(command, "commands", {}).get("mcp")
    if mcp is None or "install" not in getattr(mcp, "commands", {}):
        pytest.skip("the mcp group (mnemonic/cli/mcp.py) does not register install yet")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    code, out, _ = run(
        {"MNEMONIC_HOME": str(tmp_path / "data")}, "mcp", "install", "--client", "codex", "--json"
    )
    assert code == 0 and json.loads(out)["action"] == "added"
    assert (home / ".codex" / "config.toml").is_file()
    code, _, _ = run({"MNEMONIC_HOME": str(tmp_path)}, "mcp", "install", "--client", "notepad")
    assert code == EX_USAGE
