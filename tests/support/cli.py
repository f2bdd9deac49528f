"""Running the ``mnemonic`` command in tests: in this process (the ``run`` fixture of
conftest.py, a second faster per call) or as a subprocess (``cli``)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable

import pytest

Run = Callable[..., tuple[int, str, str]]


def in_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    """The console entry point with ``env`` as its only MNEMONIC_* variables, argv and
    stdin set; returns the exit code, stdout and stderr. ``env`` must name MNEMONIC_HOME,
    so no test reads or writes the user's own data folder."""
    from mnemonic.cli.main import main

    def invoke(env: dict[str, str], *args: str, stdin: str = "") -> tuple[int, str, str]:
        # the user's own config, data and daemon are never a test's: name a home folder
        assert "MNEMONIC_HOME" in env, "run(env, ...) needs MNEMONIC_HOME (a tmp folder)"
        for name in [n for n in os.environ if n.upper().startswith("MNEMONIC_")]:
            monkeypatch.delenv(name)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(sys, "argv", ["mnemonic", *args])
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        with pytest.raises(SystemExit) as stop:
            main()
        captured = capsys.readouterr()
        code = stop.value.code
        return (code if isinstance(code, int) else 0), captured.out, captured.err

    return invoke


def cli(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m mnemonic <args>`` as a subprocess with exactly ``env``."""
    return subprocess.run(
        [sys.executable, "-m", "mnemonic", *args],
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
