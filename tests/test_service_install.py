"""Service install: the generated systemd unit and LaunchAgent plist, the plans, and the
install/uninstall flows.

The unit is checked by the real ``systemd-analyze verify``; the plist by a plistlib round
trip; both against golden files (set UPDATE_GOLDEN=1 to rewrite them). No user manager or
launchd runs in CI containers, so the flows run against a recorded ``systemctl`` /
``launchctl`` (the only fake here) while files, ports and /readyz are real; the real
``systemctl --user`` install runs where a user manager answers.
"""

from __future__ import annotations

import dataclasses
import http.server
import importlib.util
import json
import os
import plistlib
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import httpx
import pytest
import typer
from typer.testing import CliRunner

from mnemonic.cli.service import describe, register
from mnemonic.exits import EX_CONFIG, EX_TEMPFAIL, EX_UNAVAILABLE
from mnemonic.install import (
    Context,
    ServiceError,
    ServiceStatus,
    install,
    plan_install,
    restart,
    status,
    uninstall,
)
from mnemonic.install.common import (
    entry_command,
    fill,
    template_path,
    temporary_reason,
)
from mnemonic.install.launchd import parse_disabled, parse_print, render_plist
from mnemonic.install.ready import wait_ready
from mnemonic.install.systemd import parse_linger, quote_executable, quote_word, render_unit

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_COMMAND = ["/opt/mnemonic/bin/mnemonic"]
GOLDEN_ENV = {"MNEMONIC_HOME": "/home/user/.mnemonic"}
REACHABLE = {"initializing", "starting", "running", "degraded", "maintenance", "stopping"}


# --- helpers ----------------------------------------------------------------------------


Answer = tuple[int, str]


class RecordingManager:
    """Stands in for systemctl/loginctl/launchctl, which have no manager to talk to here.

    ``answer(argv)`` returns (exit code, stdout); ``calls`` keeps every command run.
    """

    def __init__(self, answer: Callable[[list[str]], Answer]) -> None:
        self.answer = answer
        self.calls: list[list[str]] = []

    def __call__(
        self,
        args: Sequence[str],
        *,
        capture_output: bool,
        text: bool,
        check: bool,
        timeout: float | None,
    ) -> subprocess.CompletedProcess[str]:
        argv = list(args)
        self.calls.append(argv)
        code, out = self.answer(argv)
        return subprocess.CompletedProcess(argv, code, out, "" if code == 0 else "failed")

    def commands(self, tool: str, *skip: str) -> list[list[str]]:
        """The state-changing calls of ``tool`` (queries named in ``skip`` left out)."""
        return [c for c in self.calls if c[0] == tool and not any(s in c for s in skip)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_home(tmp_path: Path, port: int | None = None) -> Path:
    """A MNEMONIC_HOME whose config.yaml sets the port: a free one unless given, never
    the default 9999, which a developer's own daemon (``make run``) may hold."""
    home = tmp_path / "mnemonic-home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.yaml").write_text(f"server:\n  port: {port or free_port()}\n")
    return home


def make_ctx(
    tmp_path: Path,
    run: RecordingManager,
    *,
    platform: str = "linux",
    env: dict[str, str] | None = None,
    executable: str = sys.executable,
) -> Context:
    user_home = tmp_path / "user"
    user_home.mkdir(exist_ok=True)
    return Context(
        platform=platform,
        home=user_home,
        env=env if env is not None else {"MNEMONIC_HOME": str(make_home(tmp_path))},
        executable=executable,
        uid=501,
        user="tester",
        run=run,
    )


def systemd_answers(active: list[bool], linger: str = "no") -> Callable[[list[str]], Answer]:
    """A reachable user manager; ``active[0]`` says whether the unit is running."""

    def answer(argv: list[str]) -> Answer:
        if argv[:3] == ["systemctl", "--user", "is-system-running"]:
            return 0, "running\n"
        if "is-active" in argv:
            return (0, "active\n") if active[0] else (3, "inactive\n")
        if "is-enabled" in argv:
            return 0, "enabled\n"
        if "MainPID" in argv:
            return 0, "4242\n"
        if argv[0] == "loginctl":
            return 0, f"Linger={linger}\n"
        return 0, ""

    return answer


class ReadyzServer:
    """A real HTTP server on 127.0.0.1 that answers /readyz with 503 until ``ready``; it
    binds its port on ``start()``, as a daemon would once started."""

    def __init__(self, port: int) -> None:
        state = self
        self.port = port

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                code = 200 if state.ready.is_set() else 503
                self.send_response(code if self.path == "/readyz" else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.handler = Handler
        self.ready = threading.Event()
        self.server: http.server.ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), self.handler)
        server = self.server
        self.thread = threading.Thread(
            target=lambda: server.serve_forever(poll_interval=0.05), daemon=True
        )
        self.thread.start()

    def __enter__(self) -> ReadyzServer:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None and self.thread is not None:
            self.server.shutdown()
            self.server.server_close()
            self.thread.join(timeout=5)


def tree(root: Path) -> dict[str, float]:
    """Every path under ``root`` with its mtime: a snapshot to prove nothing changed."""
    return {str(p): p.stat().st_mtime for p in sorted(root.rglob("*"))}


def check_golden(name: str, content: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(content, encoding="utf-8")
    assert content == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


# --- pure pieces ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "dollar", "expected"),
    [
        ("/usr/bin/mnemonic", True, "/usr/bin/mnemonic"),
        ("serve", True, "serve"),
        ("/opt/my apps/mnemonic", True, '"/opt/my apps/mnemonic"'),
        ("/opt/50%/mnemonic", True, "/opt/50%%/mnemonic"),
        ("/opt/$HOME/mnemonic", True, "/opt/$$HOME/mnemonic"),
        ("MNEMONIC_HOME=/a/$b", False, "MNEMONIC_HOME=/a/$b"),
        ('/opt/say "hi"', True, '"/opt/say \\"hi\\""'),
        ("/opt/back\\slash", True, '"/opt/back\\\\slash"'),
        ("a;b", True, '"a;b"'),
        ("", True, '""'),
    ],
)
def test_quote_word(value: str, dollar: bool, expected: str) -> None:
    assert quote_word(value, expand_dollar=dollar) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/opt/m/bin/mnemonic", "/opt/m/bin/mnemonic"),
        ("/opt/my apps/mnemonic", '"/opt/my apps/mnemonic"'),
        ("/opt/$HOME/mnemonic", "/opt/$HOME/mnemonic"),  # no $ expansion in the program
        ("/opt/50%/mnemonic", "/opt/50%%/mnemonic"),
        ("/home/o'brien/bin/mnemonic", None),
        ('/opt/say "hi"/mnemonic', None),
        ("/opt/back\\slash/mnemonic", None),
        ("/opt/tab\there/mnemonic", None),
    ],
)
def test_quote_executable(path: str, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(ValueError, match="systemd refuses"):
            quote_executable(path)
    else:
        assert quote_executable(path) == expected


def test_quote_word_refuses_newlines() -> None:
    with pytest.raises(ValueError, match="newline"):
        quote_word("/opt/a\nb", expand_dollar=True)


@pytest.mark.parametrize(
    ("output", "expected"),
    [("Linger=yes\n", True), ("Linger=no\n", False), ("", None), ("Linger=maybe", None)],
)
def test_parse_linger(output: str, expected: bool | None) -> None:
    assert parse_linger(output) is expected


LAUNCHCTL_PRINT = """gui/501/com.mnemonic.daemon = {
\tactive count = 1
\tpath = /Users/u/Library/LaunchAgents/com.mnemonic.daemon.plist
\tstate = running
\tprogram = /opt/mnemonic/bin/mnemonic
\tpid = 8123
\tlast exit code = (never exited)
}
"""


def test_parse_launchctl_print() -> None:
    assert parse_print(LAUNCHCTL_PRINT) == ("running", 8123)
    assert parse_print("state = not running\n") == ("not", None)
    assert parse_print("") == (None, None)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ('disabled services = {\n\t"com.mnemonic.daemon" => disabled\n}', True),
        ('disabled services = {\n\t"com.mnemonic.daemon" => true\n}', True),
        ('disabled services = {\n\t"com.mnemonic.daemon" => enabled\n}', False),
        ('disabled services = {\n\t"com.other" => disabled\n}', False),
    ],
)
def test_parse_disabled(output: str, expected: bool) -> None:
    assert parse_disabled(output, "com.mnemonic.daemon") is expected


@pytest.mark.parametrize(
    ("path", "refused"),
    [
        ("/tmp/venv/bin/mnemonic", True),
        ("/var/tmp/x/bin/python", True),
        ("/home/u/.local/bin/mnemonic", False),
        ("/home/u/.cache/uv/archive-v0/Xy12/bin/python", True),
        ("/home/u/.local/pipx/.cache/abc/bin/python", True),
        ("/opt/homebrew/bin/mnemonic", False),
    ],
)
def test_temporary_reason(path: str, refused: bool) -> None:
    roots = [Path("/tmp"), Path("/var/tmp")]
    assert (temporary_reason(path, roots) is not None) is refused


def test_temporary_reason_follows_symlinks(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A lasting-looking path that links into a temporary folder is still temporary."""
    temporary = tmp_path_factory.mktemp("temporary")
    lasting = tmp_path_factory.mktemp("lasting")
    (temporary / "python").touch()
    (lasting / "python").symlink_to(temporary / "python")
    roots = [temporary.resolve()]
    assert temporary_reason(str(lasting / "python"), roots) is not None
    (lasting / "other").touch()
    assert temporary_reason(str(lasting / "other"), roots) is None


def test_entry_command_prefers_the_sibling_script(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python"
    assert entry_command(str(python)) == [str(python), "-m", "mnemonic"]
    script = bin_dir / "mnemonic"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert entry_command(str(python)) == [str(script)]


def test_templates_found_in_the_checkout_and_placeholders_are_strict() -> None:
    assert template_path("mnemonic.service.in").is_file()
    assert template_path("com.mnemonic.daemon.plist.in").is_file()
    assert fill("a @X@ b", {"X": "1"}) == "a 1 b"
    with pytest.raises(KeyError, match="@Y@"):
        fill("a @Y@", {"X": "1"})


# --- golden files -----------------------------------------------------------------------


def test_unit_matches_golden() -> None:
    check_golden("mnemonic.service", render_unit(GOLDEN_COMMAND, GOLDEN_ENV))


def test_plist_matches_golden() -> None:
    logs = Path("/Users/user/Library/Logs/mnemonic")
    check_golden(
        "com.mnemonic.daemon.plist",
        render_plist(GOLDEN_COMMAND, GOLDEN_ENV, logs).decode("utf-8"),
    )


def test_planned_content_is_the_golden_shape_with_this_machines_paths(tmp_path: Path) -> None:
    """The real plan (real entry point, real home) normalised back to the golden file."""
    run = RecordingManager(systemd_answers([False]))
    ctx = make_ctx(tmp_path, run)
    plan = plan_install(ctx, force=True)
    text = plan.content.decode("utf-8")
    text = text.replace(plan.command[0], GOLDEN_COMMAND[0])
    text = text.replace(ctx.env["MNEMONIC_HOME"], GOLDEN_ENV["MNEMONIC_HOME"])
    if plan.command[1:] == ["-m", "mnemonic", "serve"]:  # no script beside this interpreter
        text = text.replace(" -m mnemonic serve", " serve")
    assert text == (GOLDEN / "mnemonic.service").read_text(encoding="utf-8")


# --- systemd-analyze verify -------------------------------------------------------------


def analyze(unit: Path, runtime: Path) -> subprocess.CompletedProcess[str]:
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}  # --user needs a runtime folder
    return subprocess.run(
        ["systemd-analyze", "verify", "--user", str(unit)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


needs_analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here"
)


@needs_analyze
def test_generated_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    run = RecordingManager(systemd_answers([False]))
    ctx = make_ctx(tmp_path, run)
    plan = plan_install(ctx, force=True)
    assert plan.path == ctx.home / ".config" / "systemd" / "user" / "mnemonic.service"
    plan.path.parent.mkdir(parents=True)
    plan.path.write_bytes(plan.content)
    done = analyze(plan.path, tmp_path / "runtime")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    text = plan.content.decode()
    for line in (
        "Type=notify",
        "NotifyAccess=main",
        "Restart=on-failure",
        "NoNewPrivileges=yes",
        "UMask=0077",
        "WantedBy=default.target",
    ):
        assert f"\n{line}\n" in text


@needs_analyze
def test_awkward_paths_are_quoted_so_systemd_reads_them_back(tmp_path: Path) -> None:
    """Spaces, % and $ in the entry point, and quotes and backslashes in MNEMONIC_HOME too,
    survive: verify checks that ExecStart names an executable file, which only the
    correctly unescaped path is."""
    odd = tmp_path / "my apps %i $HOME" / "bin"
    odd.mkdir(parents=True)
    script = odd / "mnemonic"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    home = tmp_path / 'home 100% $HOME "q" back\\slash'
    env = {"MNEMONIC_HOME": str(home), "XDG_CONFIG_HOME": str(tmp_path)}
    ctx = make_ctx(tmp_path, RecordingManager(systemd_answers([False])), env=env)
    ctx = dataclasses.replace(ctx, executable=str(odd / "python"))
    plan = plan_install(ctx, force=True)
    assert plan.path == tmp_path / "systemd" / "user" / "mnemonic.service"
    assert plan.command == [str(script), "serve"]
    plan.path.parent.mkdir(parents=True)
    plan.path.write_bytes(plan.content)
    done = analyze(plan.path, tmp_path / "runtime")
    assert (done.returncode, done.stderr) == (0, "")
    # the same unit without the escaping is rejected, so the check above can fail
    text = plan.content.decode()
    quoted = quote_executable(str(script))
    naive = text.replace(f"ExecStart={quoted} serve", f"ExecStart={script} serve")
    assert naive != text
    plan.path.write_text(naive)
    assert "is not executable" in analyze(plan.path, tmp_path / "runtime").stderr


# --- plist ------------------------------------------------------------------------------


def launchd_answers(loaded: list[bool]) -> Callable[[list[str]], Answer]:
    def answer(argv: list[str]) -> Answer:
        if argv[:2] == ["launchctl", "print"] and argv[2] == "gui/501":
            return 0, "gui/501 = {\n}\n"
        if argv[:2] == ["launchctl", "print"]:
            return (0, LAUNCHCTL_PRINT) if loaded[0] else (113, "")
        if argv[:2] == ["launchctl", "bootout"]:
            was, loaded[0] = loaded[0], False
            return (0, "") if was else (3, "")
        if argv[:2] == ["launchctl", "bootstrap"]:
            loaded[0] = True
        if argv[:2] == ["launchctl", "print-disabled"]:
            return 0, "disabled services = {\n}\n"
        return 0, ""

    return answer


def test_plist_round_trip_keys_and_types(tmp_path: Path) -> None:
    env = {"MNEMONIC_HOME": str(tmp_path / "R&D <memories>")}
    ctx = make_ctx(tmp_path, RecordingManager(launchd_answers([False])), platform="darwin", env=env)
    plan = plan_install(ctx, force=True)
    assert plan.path == ctx.home / "Library" / "LaunchAgents" / "com.mnemonic.daemon.plist"
    data = plistlib.loads(plan.content)
    assert data["Label"] == "com.mnemonic.daemon"
    args = data["ProgramArguments"]
    assert isinstance(args, list) and all(isinstance(a, str) for a in args)
    assert Path(args[0]).is_absolute() and args[-1] == "serve"
    assert data["RunAtLoad"] is True
    assert data["KeepAlive"] == {"SuccessfulExit": False}
    assert data["KeepAlive"]["SuccessfulExit"] is False
    assert data["ProcessType"] in {"Interactive", "Standard"}
    assert data["Umask"] == 0o077 and isinstance(data["Umask"], int)
    logs = ctx.home / "Library" / "Logs" / "mnemonic"
    assert Path(data["StandardOutPath"]).parent == logs
    assert Path(data["StandardErrorPath"]).parent == logs
    assert data["StandardOutPath"] != data["StandardErrorPath"]
    assert data["EnvironmentVariables"] == {"MNEMONIC_HOME": env["MNEMONIC_HOME"]}
    assert set(data) == {
        "Label",
        "ProgramArguments",
        "EnvironmentVariables",
        "RunAtLoad",
        "KeepAlive",
        "ProcessType",
        "Umask",
        "StandardOutPath",
        "StandardErrorPath",
    }
    assert plistlib.dumps(data, sort_keys=False) == plan.content
    assert plan.folders == [logs]


def test_plist_without_environment_has_no_environment_key() -> None:
    data = plistlib.loads(render_plist(["/opt/m/bin/mnemonic"], {}, Path("/Users/u/Logs")))
    assert "EnvironmentVariables" not in data


# --- refusals ---------------------------------------------------------------------------


def test_entry_point_in_a_temporary_folder_is_refused(tmp_path: Path) -> None:
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "mnemonic").write_text("#!/bin/sh\n")
    (venv_bin / "mnemonic").chmod(0o755)
    run = RecordingManager(systemd_answers([False]))
    ctx = make_ctx(tmp_path, run, executable=str(venv_bin / "python"))
    with pytest.raises(ServiceError) as refused:
        plan_install(ctx)
    assert refused.value.exit_code == EX_CONFIG == 78
    assert "temporary" in refused.value.message and "--force" in refused.value.fix
    forced = plan_install(ctx, force=True)
    assert forced.command == [str(venv_bin / "mnemonic"), "serve"]
    assert any("--force" in w for w in forced.warnings)


def test_entry_point_systemd_cannot_run_is_refused(tmp_path: Path) -> None:
    bin_dir = tmp_path / "o'brien" / "bin"
    bin_dir.mkdir(parents=True)
    run = RecordingManager(systemd_answers([False]))
    ctx = make_ctx(tmp_path, run, executable=str(bin_dir / "python"))
    with pytest.raises(ServiceError) as refused:
        plan_install(ctx, force=True, dry_run=True)
    assert refused.value.exit_code == EX_CONFIG
    assert "quote" in refused.value.message


def test_no_service_manager_prints_the_foreground_command(tmp_path: Path) -> None:
    run = RecordingManager(lambda argv: (0, ""))
    ctx = make_ctx(tmp_path, run, platform="freebsd14")
    with pytest.raises(ServiceError) as refused:
        plan_install(ctx, force=True, dry_run=True)
    assert refused.value.exit_code == EX_UNAVAILABLE == 69
    assert refused.value.fix.endswith(" serve")
    assert status(ctx).manager is None


def test_unreachable_user_manager_refuses_install_but_dry_run_shows_the_plan(
    tmp_path: Path,
) -> None:
    run = RecordingManager(lambda argv: (1, "offline\n"))
    ctx = make_ctx(tmp_path, run)
    with pytest.raises(ServiceError) as refused:
        plan_install(ctx, force=True)
    assert refused.value.exit_code == EX_UNAVAILABLE
    assert "offline" in refused.value.message
    plan = plan_install(ctx, force=True, dry_run=True)
    assert any("a real install stops here" in w for w in plan.warnings)
    state = status(ctx)
    assert (state.manager, state.reachable, state.installed) == ("systemd", False, False)


def test_settings_the_service_will_not_see_are_named(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    env = {"MNEMONIC_HOME": str(home), "MNEMONIC_TOKEN": "secret-value-123", "HOME": "/x"}
    plan = plan_install(
        make_ctx(tmp_path, RecordingManager(systemd_answers([False])), env=env), force=True
    )
    assert plan.environment == {"MNEMONIC_HOME": str(home)}
    assert any("MNEMONIC_TOKEN" in w for w in plan.warnings)
    assert b"secret-value-123" not in plan.content


def test_broken_config_stops_the_install(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    (home / "config" / "config.yaml").write_text("server:\n  port: 70000\n")
    ctx = make_ctx(
        tmp_path, RecordingManager(systemd_answers([False])), env={"MNEMONIC_HOME": str(home)}
    )
    with pytest.raises(ServiceError) as refused:
        plan_install(ctx, force=True, dry_run=True)
    assert refused.value.exit_code == EX_CONFIG
    assert "port" in refused.value.message


# --- flows with a recorded manager and a real /readyz ------------------------------------


def test_systemd_install_writes_the_unit_runs_systemctl_and_waits_for_readyz(
    tmp_path: Path,
) -> None:
    port = free_port()
    active = [False]
    answers = systemd_answers(active)
    with ReadyzServer(port) as server:

        def answer(argv: list[str]) -> Answer:
            if "enable" in argv:  # the daemon binds, and is ready a moment later
                active[0] = True
                server.start()
                threading.Timer(0.4, server.ready.set).start()
            return answers(argv)

        run = RecordingManager(answer)
        env = {"MNEMONIC_HOME": str(make_home(tmp_path, port))}
        ctx = make_ctx(tmp_path, run, env=env)
        plan = plan_install(ctx, force=True)
        messages: list[str] = []
        elapsed, notes = install(ctx, plan, wait_s=10, say=messages.append)
    assert elapsed is not None and elapsed >= 0.3
    assert plan.path.read_bytes() == plan.content
    assert plan.path.stat().st_mode & 0o777 == 0o644
    assert run.commands("systemctl", "is-system-running", "is-active", "is-enabled", "show") == [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "try-restart", "mnemonic.service"],
        ["systemctl", "--user", "enable", "--now", "mnemonic.service"],
    ]
    assert notes and "loginctl enable-linger tester" in notes[0]
    assert any(m.startswith("waiting up to 10 s for http://127.0.0.1:") for m in messages)

    state = status(ctx)
    assert (state.installed, state.enabled, state.active, state.pid) == (True, True, True, 4242)
    assert state.linger is False
    assert ("linger", "no (the service stops at logout; fix: loginctl enable-linger $USER)") in (
        describe(state)
    )

    run.calls.clear()
    result = uninstall(ctx, dry_run=False, say=messages.append)
    assert result.installed and not plan.path.exists()
    assert run.commands("systemctl", "is-system-running") == [
        ["systemctl", "--user", "disable", "--now", "mnemonic.service"],
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "reset-failed", "mnemonic.service"],
    ]


def test_install_times_out_with_the_log_command_when_readyz_never_answers(
    tmp_path: Path,
) -> None:
    port = free_port()
    run = RecordingManager(systemd_answers([False], linger="yes"))
    ctx = make_ctx(tmp_path, run, env={"MNEMONIC_HOME": str(make_home(tmp_path, port))})
    plan = plan_install(ctx, force=True)
    started = time.monotonic()
    with pytest.raises(ServiceError) as failed:
        install(ctx, plan, wait_s=0.5, say=lambda m: None)
    assert time.monotonic() - started < 5
    assert failed.value.exit_code == EX_UNAVAILABLE
    assert failed.value.fix == "journalctl --user -u mnemonic.service -e"


def test_install_refuses_a_port_already_held_by_another_process(tmp_path: Path) -> None:
    port = free_port()
    run = RecordingManager(systemd_answers([False]))
    ctx = make_ctx(tmp_path, run, env={"MNEMONIC_HOME": str(make_home(tmp_path, port))})
    plan = plan_install(ctx, force=True)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", port))
        holder.listen()
        with pytest.raises(ServiceError) as refused:
            install(ctx, plan, wait_s=1, say=lambda m: None)
    assert refused.value.exit_code == EX_TEMPFAIL
    assert f"pid {os.getpid()}" in refused.value.message
    assert not plan.path.exists()
    assert run.commands("systemctl", "is-system-running", "is-active", "is-enabled", "show") == []


def test_launchd_install_restart_and_uninstall(tmp_path: Path) -> None:
    loaded = [False]
    run = RecordingManager(launchd_answers(loaded))
    ctx = make_ctx(tmp_path, run, platform="darwin")
    plan = plan_install(ctx, force=True)
    install(ctx, plan, wait_s=0, say=lambda m: None)
    assert plan.path.read_bytes() == plan.content
    assert (ctx.home / "Library" / "Logs" / "mnemonic").is_dir()
    assert run.commands("launchctl", "print", "print-disabled") == [
        ["launchctl", "bootout", "gui/501/com.mnemonic.daemon"],
        ["launchctl", "enable", "gui/501/com.mnemonic.daemon"],
        ["launchctl", "bootstrap", "gui/501", str(plan.path)],
    ]
    state = status(ctx)
    assert (state.installed, state.enabled, state.active, state.pid) == (True, True, True, 8123)

    run.calls.clear()
    restart(ctx, wait_s=0, say=lambda m: None)
    assert run.commands("launchctl", "print") == [
        ["launchctl", "kickstart", "-k", "gui/501/com.mnemonic.daemon"]
    ]

    run.calls.clear()
    result = uninstall(ctx, dry_run=False, say=lambda m: None)
    assert result.installed and not plan.path.exists()
    assert run.commands("launchctl", "print") == [
        ["launchctl", "bootout", "gui/501/com.mnemonic.daemon"]
    ]
    assert (ctx.home / "Library" / "Logs" / "mnemonic").is_dir(), "logs are kept"


def test_uninstall_when_nothing_is_installed_runs_nothing(tmp_path: Path) -> None:
    run = RecordingManager(systemd_answers([False]))
    result = uninstall(make_ctx(tmp_path, run), dry_run=False, say=lambda m: None)
    assert not result.installed
    assert run.commands("systemctl", "is-system-running") == []


def test_wait_ready_reports_progress_until_ready(tmp_path: Path) -> None:
    port = free_port()
    progress: list[float] = []
    with ReadyzServer(port) as server:
        server.start()
        threading.Timer(0.7, server.ready.set).start()
        url = f"http://127.0.0.1:{port}/readyz"
        elapsed = wait_ready(url, 10, progress.append, interval_s=0.05, progress_every_s=0.2)
    assert elapsed is not None and elapsed >= 0.6
    assert len(progress) >= 2
    assert wait_ready(url, 0.3, interval_s=0.05) is None  # server gone: times out


# --- the CLI ----------------------------------------------------------------------------


def cli_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """mnemonic (test harness)."""

    register(app)
    return app


def test_cli_dry_run_changes_nothing_on_disk(tmp_path: Path) -> None:
    home = tmp_path / "home"
    xdg = tmp_path / "xdg"
    home.mkdir()
    xdg.mkdir()
    mnemonic_home = make_home(tmp_path, free_port())
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(xdg), "MNEMONIC_HOME": str(mnemonic_home)}
    before = tree(tmp_path)
    runner = CliRunner()
    shown = runner.invoke(cli_app(), ["service", "install", "--dry-run", "--force"], env=env)
    assert shown.exit_code == 0, shown.output
    assert f"# would write {xdg}/systemd/user/mnemonic.service" in shown.stdout
    assert "Type=notify" in shown.stdout
    assert f"Environment=MNEMONIC_HOME={mnemonic_home}" in shown.stdout
    as_json = runner.invoke(
        cli_app(), ["service", "install", "--dry-run", "--json", "--force"], env=env
    )
    assert as_json.exit_code == 0, as_json.output
    payload = json.loads(as_json.stdout)
    assert payload["dry_run"] is True and payload["manager"] == "systemd"
    assert payload["commands"][-1] == ["systemctl", "--user", "enable", "--now", "mnemonic.service"]
    removed = runner.invoke(cli_app(), ["service", "uninstall", "--dry-run"], env=env)
    assert removed.exit_code == 0 and "not installed" in removed.stdout
    assert tree(tmp_path) == before


def _user_manager_problem() -> str | None:
    try:
        done = subprocess.run(
            ["systemctl", "--user", "is-system-running"],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"systemctl cannot run here: {exc}"
    if done.stdout.strip() in REACHABLE:
        return None
    said = (done.stdout.strip() or done.stderr.strip() or "no answer").splitlines()[0]
    return f"no systemd user manager answers here (`systemctl --user is-system-running`: {said})"


def test_cli_install_without_a_service_manager_exits_69_with_the_foreground_command(
    tmp_path: Path,
) -> None:
    if sys.platform == "darwin" or _user_manager_problem() is None:
        pytest.skip("a service manager answers here: this test would really install")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "MNEMONIC_HOME": str(make_home(tmp_path)),
    }
    done = CliRunner().invoke(cli_app(), ["service", "install", "--force"], env=env)
    assert done.exit_code == 69
    assert "foreground" in done.stderr
    assert "fix: " in done.stderr and done.stderr.rstrip().endswith(" serve")
    assert not (home / ".config" / "systemd").exists()
    shown = CliRunner().invoke(cli_app(), ["service", "status", "--json"], env=env)
    assert shown.exit_code == 0
    assert '"manager_reachable": false' in shown.stdout


def test_describe_status_lines() -> None:
    unreachable = ServiceStatus("systemd", Path("/u/m.service"), False, False, detail="offline")
    assert describe(unreachable)[0] == ("manager", "systemd (not reachable: offline)")
    up = ServiceStatus(
        "launchd", Path("/p"), True, True, enabled=True, active=True, pid=7, detail="running"
    )
    assert dict(describe(up)) == {
        "manager": "launchd (reachable)",
        "file": "/p (installed)",
        "enabled": "yes",
        "active": "yes (running, pid 7)",
    }
    assert describe(ServiceStatus(None, None, False, False, detail="none")) == [("manager", "none")]


# --- the real thing, where a user manager answers ---------------------------------------


@pytest.mark.slow
def test_real_systemd_user_install(tmp_path: Path) -> None:
    problem = _user_manager_problem()
    if problem:
        pytest.skip(problem)
    if importlib.util.find_spec("mnemonic.sdnotify") is None:
        pytest.skip("the daemon does not send READY=1 yet (mnemonic.sdnotify is missing)")
    port = free_port()
    base = Context.current()
    ctx = dataclasses.replace(
        base,
        env={**os.environ, "MNEMONIC_HOME": str(make_home(tmp_path, port))},
        unit_name=f"mnemonic-test-{uuid.uuid4().hex[:8]}",  # never touch a real install
    )
    plan = plan_install(ctx, force=True)
    try:
        elapsed, _ = install(ctx, plan, wait_s=90, say=lambda m: None)
        assert elapsed is not None
        state = status(ctx)
        assert (state.installed, state.enabled, state.active) == (True, True, True)
        assert state.pid
        assert httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200
    finally:
        uninstall(ctx, dry_run=False, say=lambda m: None)
    assert not plan.path.exists()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/livez", timeout=2)


@pytest.fixture(autouse=True)
def _no_stray_threads() -> Iterator[None]:
    """Timers started by a test must be done before the next one (they set server state)."""
    yield
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.join(timeout=5)
