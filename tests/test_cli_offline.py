"""The CLI as a user runs it (a real ``python -m mnemonic`` subprocess) where no daemon is
needed: exit codes, help, shell completion in real shells, and ``watch`` against a small
real WebSocket server on 127.0.0.1 that plays scripted streams."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support.cli import Run, cli
from support.daemon_proc import free_port

TOKEN = "offline-test-token"
BIN = str(Path(sys.executable).parent)


# `python -m mnemonic` with Ctrl-C restored: a suite started in the background
# (`make test &`) runs with SIGINT ignored, children inherit that, and Python then never
# raises KeyboardInterrupt; these tests send SIGINT on purpose.
WITH_CTRL_C = [
    sys.executable,
    "-c",
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler);"
    " sys.argv[0] = 'mnemonic'; runpy.run_module('mnemonic', run_name='__main__')",
]


def _env(home: Path, port: int, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("MNEMONIC_")}
    env.update(
        {
            "MNEMONIC_HOME": str(home),
            "MNEMONIC_PORT": str(port),
            "MNEMONIC_TOKEN": TOKEN,
            "PATH": BIN + os.pathsep + env.get("PATH", ""),
        }
    )
    env.update(extra)
    return env


@pytest.fixture
def down(tmp_path: Path) -> dict[str, str]:
    """An environment whose port has no daemon behind it."""
    return _env(tmp_path, free_port())


# --- exit codes and help ----------------------------------------------------------------


def test_help_documents_the_exit_codes_and_lists_the_commands(down: dict[str, str]) -> None:
    done = cli(down, "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    for code in ("64", "65", "69", "70", "75", "78"):
        assert code in text
    assert "Exit codes" in text and "mnemonic serve" in text
    for command in ("forget", "amend", "watch", "completion", "status", "config"):
        assert command in text


@pytest.mark.parametrize(
    "args",
    [
        ("no-such-command",),
        ("recall",),  # missing argument
        ("status", "--no-such-option"),
        ("recall", "x", "--limit", "0"),
        ("completion", "powershell"),
        ("--set", "nonsense", "version"),
        (),  # no command at all: help on stderr, usage error
    ],
)
def test_usage_errors_exit_64(run: Run, down: dict[str, str], args: tuple[str, ...]) -> None:
    code, out, err = run(down, *args)
    assert code == 64, err
    assert out == "" or not args


@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("recall", "anything"),
        ("remember", "something"),
        ("forget", "0190f2a0-0000-7000-8000-000000000000"),
        ("amend", "0190f2a0-0000-7000-8000-000000000000", "new text"),
        ("watch",),
    ],
)
def test_daemon_commands_exit_69_with_how_to_start(
    run: Run, down: dict[str, str], args: tuple[str, ...]
) -> None:
    code, out, err = run(down, *args)
    assert code == 69, err
    assert "mnemonic serve" in err
    assert out == ""


def test_a_daemon_command_in_a_real_process_exits_69(down: dict[str, str]) -> None:
    done = cli(down, "forget", "some-id")
    assert done.returncode == 69
    assert "mnemonic serve" in done.stderr
    assert done.stdout == ""


def test_status_json_when_down_says_not_running(run: Run, down: dict[str, str]) -> None:
    code, out, err = run(down, "status", "--json")
    assert code == 69
    assert json.loads(out) == {"running": False}
    assert "mnemonic serve" in err


def test_invalid_configuration_exits_78_before_anything_else(run: Run, tmp_path: Path) -> None:
    code, _, err = run(_env(tmp_path, free_port(), MNEMONIC_RECALL__SPREAD_HOPS="lots"), "status")
    assert code == 78
    assert "spread_hops" in err
    assert run(_env(tmp_path, 99999), "recall", "x")[0] == 78  # MNEMONIC_PORT out of range
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text("server: [unclosed\n", encoding="utf-8")
    assert run(_env(tmp_path, free_port()), "recall", "x")[0] == 78


def test_amend_with_empty_content_is_a_data_error_without_a_daemon(
    run: Run, down: dict[str, str]
) -> None:
    assert run(down, "amend", "some-id", "-", stdin="\n")[0] == 65
    code, _, err = run(down, "amend", "some-id", "   ")
    assert code == 65
    assert "empty" in err


def test_amend_without_content_is_a_usage_error_even_with_stdin_piped(
    run: Run, down: dict[str, str]
) -> None:
    """Only '-' reads stdin: a missing text never turns into a silent read (which would
    hang on a terminal, or take a script's own input as the new content)."""
    code, out, err = run(down, "amend", "some-id", stdin="the script's next line\n")
    assert code == 64
    assert "'-'" in err and out == ""


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


def test_help_says_what_each_option_takes(run: Run, down: dict[str, str]) -> None:
    """No ``<bool>`` beside a flag, no bare ``<str>``/``<float>`` beside an option."""
    import typer

    from mnemonic.cli.main import app

    paths = list(_commands(typer.main.get_command(app)))
    assert ("list",) in paths and ("exclusions", "add") in paths
    for path in paths:
        code, out, err = run(down, *path, "--help")
        assert code == 0, (path, err)
        for label in ("<bool>", "<str>", "<float>", "<int>", "<int range>", "<float range>"):
            options = out.split("Options", 1)[-1]
            assert label not in options, (path, label, out)
    code, out, _ = run(down, "list", "--help")
    assert "--project" in out and "NAME" in out and "--limit" in out


def test_small_read_commands_print_json(run: Run, down: dict[str, str], tmp_path: Path) -> None:
    code, out, _ = run(down, "version", "--json")
    assert code == 0
    assert set(json.loads(out)) == {"version"}
    code, out, _ = run(down, "paths", "--json")
    assert json.loads(out)["database"] == str(tmp_path / "data" / "mnemonic.db")
    env = dict(down)
    del env["MNEMONIC_TOKEN"]
    code, out, _ = run(env, "token")
    assert code == 69
    assert out == ""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "token").write_text("from-file\n", encoding="utf-8")
    assert run(env, "token")[1] == "from-file\n"


# --- shell completion -----------------------------------------------------------------


def test_bash_completion_completes_commands_and_event_types(down: dict[str, str]) -> None:
    """The documented install line, then bash's own completion call, twice."""
    probe = (
        'eval "$(mnemonic completion bash)"\n'
        "COMP_WORDS=(mnemonic sta); COMP_CWORD=1; _mnemonic_completion mnemonic\n"
        'printf "%s\\n" "${COMPREPLY[@]}"; echo ---\n'
        "COMP_WORDS=(mnemonic watch --types memory_st); COMP_CWORD=3; "
        "_mnemonic_completion mnemonic\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", probe],
        env=down,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    commands, types = done.stdout.split("---\n")
    assert commands.split() == ["stats", "status"]
    assert types.split() == ["memory_state_changed"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_completion_completes_commands(down: dict[str, str], tmp_path: Path) -> None:
    env = {**down, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    done = subprocess.run(
        [
            "fish",
            "--no-config",
            "-c",
            'mnemonic completion fish | source; complete -C "mnemonic sta"',
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [line.split("\t")[0] for line in done.stdout.splitlines()] == ["status"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_completion_registers_its_function(down: dict[str, str], tmp_path: Path) -> None:
    env = {**down, "HOME": str(tmp_path), "ZDOTDIR": str(tmp_path)}
    probe = (
        "autoload -U compinit && compinit -u -d $HOME/.zcompdump\n"
        'eval "$(mnemonic completion zsh)"\n'
        "print -r -- ${_comps[mnemonic]}\n"
    )
    done = subprocess.run(
        ["zsh", "-f", "-c", probe], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "_mnemonic_completion"
    # and the program answers zsh's completion request
    answer = subprocess.run(
        [sys.executable, "-m", "mnemonic"],
        env={
            **down,
            "_MNEMONIC_COMPLETE": "complete_zsh",
            "_TYPER_COMPLETE_ARGS": "mnemonic watch --types agent_e",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert '"agent_error"' in answer.stdout


# --- watch against a scripted WebSocket server -----------------------------------------


class ScriptedStream:
    """A real WebSocket server on 127.0.0.1 that sends ``messages`` to each client and then
    closes with ``close`` (or holds the connection open until the test ends)."""

    def __init__(
        self,
        messages: list[str],
        close: tuple[int, str] | None = None,
        reject: int | None = None,
    ) -> None:
        self.messages = messages
        self.close = close
        self.reject = reject
        self.requests: list[tuple[str, str | None]] = []
        self.release = threading.Event()
        self.port = 0

    def _process(self, connection: Any, request: Any) -> Any:
        self.requests.append((request.path, request.headers.get("Authorization")))
        if self.reject is not None:
            return connection.respond(self.reject, "refused\n")
        return None

    def _handle(self, connection: Any) -> None:
        for message in self.messages:
            connection.send(message)
        if self.close is None:
            self.release.wait(30)
            return
        connection.close(*self.close)

    @contextmanager
    def running(self) -> Iterator[ScriptedStream]:
        from websockets.sync.server import serve

        with serve(self._handle, "127.0.0.1", 0, process_request=self._process) as server:
            self.port = server.socket.getsockname()[1]
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            try:
                yield self
            finally:
                self.release.set()
                server.shutdown()
                thread.join(10)


EVENT = {
    "type": "memory_encoded",
    "at": "2026-01-02T03:04:05+00:00",
    "context": {"id": "c1", "parent_id": "c0"},
    "payload": {"raw_id": "r1", "memory_id": "m1", "project": "web", "links": 2},
}
SCRIPT = [
    json.dumps({"type": "ping", "at": "2026-01-02T03:04:04+00:00"}),
    json.dumps(EVENT),
    "not json",
    json.dumps({"type": "dropped", "count": 2}),
]


def test_watch_prints_events_and_exits_69_when_the_stream_closes(tmp_path: Path) -> None:
    """In a real process: the lines reach a pipe unbuffered and in order."""
    stream = ScriptedStream(SCRIPT, close=(1001, "going away"))
    with stream.running():
        env = _env(tmp_path, stream.port)
        done = cli(env, "watch", "--types", "memory_encoded,agent_error", "--project", "web")
    assert done.returncode == 69
    lines = done.stdout.splitlines()
    assert len(lines) == 1
    assert " memory_encoded raw_id=r1 memory_id=m1 project=web links=2" in lines[0]
    assert "2 events dropped" in done.stderr
    assert "closed the event stream (code 1001: going away)" in done.stderr
    path, auth = stream.requests[0]
    assert path == "/ws?types=memory_encoded%2Cagent_error&project=web"
    assert auth == f"Bearer {TOKEN}"


def test_watch_json_prints_every_message_but_pings(run: Run, tmp_path: Path) -> None:
    stream = ScriptedStream(SCRIPT, close=(1000, ""))
    with stream.running():
        code, out, _ = run(_env(tmp_path, stream.port), "watch", "--json")
    assert code == 69
    assert [json.loads(line) for line in out.splitlines()] == [
        EVENT,
        {"type": "dropped", "count": 2},
    ]
    assert stream.requests[0][0] == "/ws"


@pytest.mark.parametrize(
    ("close", "code"), [((1008, "unknown event types: x"), 64), ((1013, "too many"), 75)]
)
def test_watch_refused_by_the_daemon(
    run: Run, tmp_path: Path, close: tuple[int, str], code: int
) -> None:
    error = json.dumps({"type": "error", "error": close[1]})
    stream = ScriptedStream([error], close=close)
    with stream.running():
        exit_code, out, err = run(_env(tmp_path, stream.port), "watch")
    assert exit_code == code
    assert close[1] in err
    assert out == ""


def test_watch_with_a_rejected_token_exits_78(run: Run, tmp_path: Path) -> None:
    stream = ScriptedStream([], reject=403)
    with stream.running():
        code, _, err = run(_env(tmp_path, stream.port), "watch")
    assert code == 78
    assert "HTTP 403" in err and "token" in err


def test_watch_unknown_type_is_a_usage_error_before_connecting(
    run: Run, down: dict[str, str]
) -> None:
    code, _, err = run(down, "watch", "--types", "memory_encoded,bogus")
    assert code == 64
    assert "bogus" in err and "memory_encoded" in err


def test_watch_ctrl_c_exits_0(tmp_path: Path) -> None:
    stream = ScriptedStream([json.dumps(EVENT)])
    with stream.running():
        proc = subprocess.Popen(
            [*WITH_CTRL_C, "watch"],
            env=_env(tmp_path, stream.port),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None and proc.stderr is not None
            assert "memory_encoded" in proc.stdout.readline()
            deadline = time.monotonic() + 30
            while not stream.requests and time.monotonic() < deadline:
                time.sleep(0.01)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 0
            assert "watching ws://127.0.0.1" in proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()


# --- config show -------------------------------------------------------------------------


def test_config_show_reports_flag_env_file_and_default(run: Run, tmp_path: Path) -> None:
    config_file = tmp_path / "config" / "config.yaml"
    config_file.parent.mkdir(parents=True)
    config_file.write_text("recall:\n  spread_hops: 2\nserver:\n  port: 7001\n", encoding="utf-8")
    env = {"MNEMONIC_HOME": str(tmp_path), "MNEMONIC_RECALL__MMR_POOL": "33"}
    code, out, err = run(env, "--set", "server.port=7002", "config", "show", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["config_file"] == str(config_file)
    found = {s["key"]: s for s in report["settings"]}
    assert (found["server.port"]["value"], found["server.port"]["label"]) == (7002, "flag")
    assert found["recall.mmr_pool"]["value"] == 33
    assert found["recall.mmr_pool"]["label"] == "env (MNEMONIC_RECALL__MMR_POOL)"
    assert found["recall.spread_hops"]["value"] == 2
    assert found["recall.spread_hops"]["label"] == f"file ({config_file})"
    assert found["recall.spread_decay"]["label"] == "default"
    code, out, err = run({**env, "MNEMONIC_PORT": "7003"}, "config", "show")
    assert code == 0, err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    assert rows["recall.mmr_pool"] == ["33", "env", "(MNEMONIC_RECALL__MMR_POOL)"]
    assert rows["server.port"] == ["7003", "env", "(MNEMONIC_PORT)"]
    assert rows["recall.spread_hops"] == ["2", "file", f"({config_file})"]
    assert str(config_file) in err


def test_config_show_with_an_invalid_setting_exits_78(run: Run, tmp_path: Path) -> None:
    env = {"MNEMONIC_HOME": str(tmp_path), "MNEMONIC_RECALL__SPREAD_HOPS": "many"}
    code, out, err = run(env, "config", "show")
    assert code == 78
    assert "spread_hops" in err
    assert out == ""


def test_invalid_settings_name_the_key_the_value_and_the_source(run: Run, tmp_path: Path) -> None:
    config_file = tmp_path / "config" / "config.yaml"
    config_file.parent.mkdir(parents=True)
    config_file.write_text(
        "server:\n  port: 70000\nrecall:\n  spread_hopz: 2\n  source_weights:\n    api: x\n",
        encoding="utf-8",
    )
    env = {"MNEMONIC_HOME": str(tmp_path), "MNEMONIC_RECALL__MMR_POOL": "many"}
    code, out, err = run(env, "--set", "logging.level=loud", "config", "show")
    assert code == 78 and out == ""
    lines = [" ".join(line.split()) for line in err.splitlines()]
    assert f"server.port = 70000 (file {config_file}): " in "\n".join(lines)
    assert any(
        line.startswith(f"recall.spread_hopz = 2 (file {config_file}): unknown setting")
        for line in lines
    )
    assert any(
        line.startswith(f"recall.source_weights.api = 'x' (file {config_file}): ") for line in lines
    )
    assert any(
        line.startswith("recall.mmr_pool = 'many' (env MNEMONIC_RECALL__MMR_POOL): ")
        for line in lines
    )
    assert any(line.startswith("logging.level = 'loud' (flag): ") for line in lines)
    for internal in ("errors.pydantic.dev", "input_type", "type=", "_Bound", "validation error"):
        assert internal not in err


def test_a_secret_setting_is_masked_in_the_error(run: Run, tmp_path: Path) -> None:
    env = {"MNEMONIC_HOME": str(tmp_path), "MNEMONIC_EMBEDDING__API_KEY": "['sk-live-123']"}
    code, _, err = run(env, "config", "show")
    if code == 0:
        pytest.skip("embedding.api_key accepts this value: nothing to mask")
    assert "sk-live-123" not in err


class RestartingStream(ScriptedStream):
    """The first client is closed with 1012 (what uvicorn sends on a restart); the
    next ones get the script."""

    def __init__(self, messages: list[str], close: tuple[int, str]) -> None:
        super().__init__(messages, close=close)
        self.connections = 0

    def _handle(self, connection: Any) -> None:
        self.connections += 1
        if self.connections == 1:
            connection.close(1012, "service restart")
            return
        super()._handle(connection)


def test_watch_reconnects_when_the_daemon_restarts(run: Run, tmp_path: Path) -> None:
    stream = RestartingStream([json.dumps(EVENT)], close=(1000, ""))
    with stream.running():
        code, out, err = run(_env(tmp_path, stream.port), "watch", "--json")
    assert stream.connections == 2
    assert [json.loads(line) for line in out.splitlines()] == [EVENT]
    assert "code 1012" in err and "reconnected" in err
    assert code == 69  # the second close (1000) is not a restart


def test_watch_reconnect_for_0_exits_at_a_restart(run: Run, tmp_path: Path) -> None:
    stream = RestartingStream([json.dumps(EVENT)], close=(1000, ""))
    with stream.running():
        code, out, _ = run(_env(tmp_path, stream.port), "watch", "--reconnect-for", "0")
    assert (code, out, stream.connections) == (69, "", 1)
