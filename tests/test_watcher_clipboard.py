"""The clipboard watcher through a fake backend at the pyperclip boundary, the platform
probes through stand-in xclip/wl-paste/osascript executables (real subprocesses), and the
real ``pyperclip.paste`` on this headless machine."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyperclip
import pytest

from mnemonic.events.types import Event, WatcherEvent, WatcherEventDropped
from mnemonic.runtime.clock import FakeClock
from mnemonic.watchers.clipboard import (
    ClipboardConfig,
    ClipboardMarks,
    ClipboardWatcher,
    drop_reason,
    is_bare_url,
    is_denied_app,
    system_markers,
)

SECRET = "correct horse battery staple"


class FakeClipboard:
    """Stands in for pyperclip.paste and the platform's target listing."""

    def __init__(self) -> None:
        self.text = ""
        self.targets: set[str] = {"UTF8_STRING", "TARGETS"}
        self.source: str | None = None
        self.error: BaseException | None = None
        self.marks_ok = True
        self.on_marks: Callable[[], None] | None = None

    def paste(self) -> str:
        if self.error is not None:
            raise self.error
        return self.text

    def marks(self) -> ClipboardMarks | None:
        if self.on_marks is not None:
            self.on_marks()
        if not self.marks_ok:
            return None
        return ClipboardMarks(frozenset(self.targets), self.source)


class Harness:
    def __init__(self, fake: FakeClipboard, *, markers: bool = True, **config: Any) -> None:
        self.fake = fake
        self.clock = FakeClock()
        self.config = ClipboardConfig(enabled=True, **config)
        self.watcher = ClipboardWatcher(
            self.config,
            paste=fake.paste,
            markers=fake.marks if markers else None,
            clock=self.clock,
        )
        self.emitted: list[Event] = []
        self.task: asyncio.Task[None] | None = None

    @property
    def polls(self) -> int:
        return int(self.watcher.health().detail["polls"])

    @property
    def copies(self) -> list[str]:
        return [e.content for e in self.emitted if isinstance(e, WatcherEvent)]

    @property
    def reasons(self) -> list[str]:
        return [e.reason for e in self.emitted if isinstance(e, WatcherEventDropped)]

    async def _until(self, check: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 10
        while not check():
            if self.task is not None and self.task.done():
                self.task.result()
            assert time.monotonic() < deadline, "the watcher did not poll in time"
            await asyncio.sleep(0.002)

    async def start(self) -> None:
        self.task = asyncio.create_task(self.watcher.run(self.emitted.append))
        await self._until(lambda: self.polls >= 1)

    async def copy(self, text: str) -> None:
        """Put text on the fake clipboard and let one poll see it."""
        self.fake.text = text
        await self.poll()

    async def poll(self) -> None:
        await self._until(lambda: self.clock.sleepers >= 1)
        before = self.polls
        await self.clock.advance(self.config.poll_interval_s)
        await self._until(lambda: self.polls > before)

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await self.task


def _run(body: Callable[[Harness], Any], fake: FakeClipboard | None = None, **kw: Any) -> None:
    async def main() -> None:
        harness = Harness(fake or FakeClipboard(), **kw)
        await harness.start()
        try:
            await body(harness)
        finally:
            if harness.task is not None and not harness.task.done():
                await harness.stop()

    asyncio.run(main())


# --- pure rules ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "bare"),
    [
        ("https://example.com/a?b=c", True),
        ("  http://localhost:8080/\n", True),
        ("FTP://files.example.org/x.tar.gz", True),
        ("see https://example.com", False),
        ("https://a.example https://b.example", False),
        ("example.com", False),
        ("https://", False),
    ],
)
def test_is_bare_url(text: str, bare: bool) -> None:
    assert is_bare_url(text) is bare


@pytest.mark.parametrize(
    ("app", "denied"),
    [
        ("com.1password.1password", True),
        ("org.keepassxc.keepassxc", True),
        ("com.bitwarden.desktop", True),
        ("com.apple.Passwords", True),
        ("com.apple.Terminal", False),
        (None, False),
        ("", False),
    ],
)
def test_is_denied_app(app: str | None, denied: bool) -> None:
    assert is_denied_app(app, ClipboardConfig().denied_apps) is denied


@pytest.mark.parametrize(
    ("text", "marks", "checked", "reason"),
    [
        ("a note", ClipboardMarks(frozenset({"UTF8_STRING"})), True, None),
        ("pw", ClipboardMarks(frozenset({"x-kde-passwordManagerHint"})), True, "concealed"),
        ("pw", ClipboardMarks(frozenset({"org.nspasteboard.ConcealedType"})), True, "concealed"),
        ("pw", ClipboardMarks(frozenset(), "com.agilebits.1Password7"), True, "denied_app"),
        ("a note", None, True, "unverified"),  # the check exists but failed
        ("a note", None, False, None),  # no check on this platform
        ("x" * 101, None, False, "too_large"),
        ("é" * 51, None, False, "too_large"),  # bytes, not characters
        ("https://example.com", None, False, "bare_url"),
    ],
)
def test_drop_reason(
    text: str, marks: ClipboardMarks | None, checked: bool, reason: str | None
) -> None:
    config = ClipboardConfig(max_bytes=100)
    assert drop_reason(text, marks, config, checked=checked) == reason


# --- the watcher with a fake backend -------------------------------------------------------------


def test_new_text_is_emitted_once_and_repeats_are_ignored() -> None:
    fake = FakeClipboard()
    fake.text = "copied before the daemon started"

    async def body(h: Harness) -> None:
        assert h.copies == []  # the first text is only remembered
        await h.copy("TypeError: cannot read properties of undefined")
        await h.poll()
        await h.poll()  # still the same text: nothing more
        assert h.copies == ["TypeError: cannot read properties of undefined"]
        await h.copy("second")
        await h.copy("TypeError: cannot read properties of undefined")  # not the last one
        assert h.copies[1:] == ["second", "TypeError: cannot read properties of undefined"]
        await h.copy("")  # emptied, or an image: nothing
        await h.copy("   \n")
        assert len(h.copies) == 3
        event = next(e for e in h.emitted if isinstance(e, WatcherEvent))
        assert event.watcher == "clipboard" and event.kind == "copy"
        assert event.metadata == {"chars": len(event.content)}
        assert h.watcher.health().events == 3

    _run(body, fake)


def test_bare_url_and_size_cap_are_dropped() -> None:
    async def body(h: Harness) -> None:
        await h.copy("https://github.com/owner/repo/pull/42")
        await h.copy("x" * 1025)
        await h.copy("the fix is in https://github.com/owner/repo/pull/42")
        assert h.copies == ["the fix is in https://github.com/owner/repo/pull/42"]
        assert h.reasons == ["bare_url", "too_large"]
        assert h.watcher.health().detail["dropped"] == {"bare_url": 1, "too_large": 1}

    _run(body, max_bytes=1024)


def test_bare_urls_can_be_kept() -> None:
    async def body(h: Harness) -> None:
        await h.copy("https://example.com/docs")
        assert h.copies == ["https://example.com/docs"]

    _run(body, ignore_bare_urls=False)


@pytest.mark.parametrize("marker", ["x-kde-passwordManagerHint", "org.nspasteboard.ConcealedType"])
def test_concealed_content_is_dropped_without_its_text(marker: str) -> None:
    fake = FakeClipboard()

    async def body(h: Harness) -> None:
        fake.targets.add(marker)
        await h.copy(SECRET)
        await h.poll()  # still there: dropped once, not once per poll
        assert h.copies == []
        assert h.reasons == ["concealed"]
        for event in h.emitted:
            assert SECRET not in json.dumps(event.to_json())
        fake.targets.discard(marker)
        await h.copy("a normal note")
        assert h.copies == ["a normal note"]

    _run(body, fake)


def test_denied_source_app_is_dropped() -> None:
    fake = FakeClipboard()

    async def body(h: Harness) -> None:
        fake.source = "com.bitwarden.desktop"
        await h.copy(SECRET)
        assert h.copies == [] and h.reasons == ["denied_app"]

    _run(body, fake)


def test_failed_concealment_check_drops_as_unverified() -> None:
    fake = FakeClipboard()

    async def body(h: Harness) -> None:
        fake.marks_ok = False
        await h.copy(SECRET)
        assert h.copies == [] and h.reasons == ["unverified"]

    _run(body, fake)


def test_without_a_concealment_check_text_is_emitted() -> None:
    async def body(h: Harness) -> None:
        await h.copy("no check here")
        assert h.copies == ["no check here"]
        assert h.watcher.health().detail["concealment_check"] == "unavailable"

    _run(body, markers=False)


def test_text_changing_during_the_check_is_decided_next_poll() -> None:
    fake = FakeClipboard()

    async def body(h: Harness) -> None:
        # The password manager takes the clipboard between the read and the check: the
        # first text is not emitted on the strength of marks that belong to the second.
        def swap() -> None:
            fake.on_marks = None
            fake.text = SECRET
            fake.targets.add("x-kde-passwordManagerHint")

        fake.on_marks = swap
        await h.copy("an ordinary note")
        assert h.emitted == []
        await h.poll()
        assert h.copies == [] and h.reasons == ["concealed"]

    _run(body, fake)


def test_headless_backend_disables_the_watcher_once(caplog: pytest.LogCaptureFixture) -> None:
    fake = FakeClipboard()
    fake.error = pyperclip.PyperclipException("Pyperclip could not find a copy/paste mechanism")

    async def main() -> None:
        watcher = ClipboardWatcher(ClipboardConfig(enabled=True), paste=fake.paste, markers=None)
        with caplog.at_level(logging.WARNING, logger="mnemonic.watchers.clipboard"):
            await asyncio.wait_for(watcher.run(lambda _event: None), timeout=5)
        health = watcher.health()
        assert health.state == "disabled"
        assert health.message is not None and "\n" not in health.message
        assert "copy/paste mechanism" in health.message
        assert len(caplog.records) == 1

    asyncio.run(main())


def test_read_failure_after_working_degrades_and_recovers() -> None:
    fake = FakeClipboard()

    async def body(h: Harness) -> None:
        fake.error = pyperclip.PyperclipException("xclip went away")
        await h.poll()
        await h.poll()
        health = h.watcher.health()
        assert health.state == "degraded" and health.warnings == 1
        assert not h.task.done()  # type: ignore[union-attr]
        fake.error = None
        await h.copy("back again")
        assert h.watcher.health().state == "running"
        assert h.copies == ["back again"]

    _run(body, fake)


@pytest.mark.skipif(
    not sys.platform.startswith("linux")
    or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")),
    reason="needs a Linux machine without a display",
)
def test_real_pyperclip_on_a_headless_machine_disables_the_watcher() -> None:
    async def main() -> None:
        watcher = ClipboardWatcher(ClipboardConfig(enabled=True))  # the real pyperclip.paste
        await asyncio.wait_for(watcher.run(lambda _event: None), timeout=10)
        health = watcher.health()
        assert health.state == "disabled"
        assert health.message is not None and "\n" not in health.message
        assert health.detail["concealment_check"] == "unavailable"

    asyncio.run(main())


# --- the platform probes, through stand-in executables ----------------------------------------


def _tool(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell scripts")
def test_xclip_targets_are_read(tmp_path: Path) -> None:
    listing = "TARGETS\\nUTF8_STRING\\nx-kde-passwordManagerHint\\n"
    _tool(tmp_path, "xclip", f'echo "$@" > {tmp_path}/args; printf "{listing}"')
    probe = system_markers(environ={"DISPLAY": ":0", "PATH": str(tmp_path)}, platform="linux")
    assert probe is not None and probe.name == "xclip"
    marks = probe()
    assert marks == ClipboardMarks(
        frozenset({"TARGETS", "UTF8_STRING", "x-kde-passwordManagerHint"})
    )
    assert (tmp_path / "args").read_text().split() == [
        "-selection",
        "clipboard",
        "-t",
        "TARGETS",
        "-o",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell scripts")
def test_probe_failures_and_timeouts_give_no_marks(tmp_path: Path) -> None:
    _tool(tmp_path, "wl-paste", "echo 'No selection' >&2; exit 1")
    env = {"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0", "PATH": str(tmp_path)}
    probe = system_markers(environ=env, platform="linux")
    assert probe is not None and probe.name == "wl-paste"  # Wayland first
    assert probe() is None
    _tool(tmp_path, "wl-paste", "sleep 5")
    slow = system_markers(0.2, environ=env, platform="linux")
    assert slow is not None
    started = time.monotonic()
    assert slow() is None
    assert time.monotonic() - started < 3


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell scripts")
def test_macos_probe_reads_types_and_source(tmp_path: Path) -> None:
    reply = {
        "types": ["public.utf8-plain-text", "org.nspasteboard.ConcealedType"],
        "source": "com.1password.1password",
    }
    _tool(tmp_path, "osascript", f"cat <<'EOF'\n{json.dumps(reply)}\nEOF")
    probe = system_markers(environ={"PATH": str(tmp_path)}, platform="darwin")
    assert probe is not None and probe.name == "osascript"
    marks = probe()
    assert marks is not None
    assert "org.nspasteboard.ConcealedType" in marks.targets
    assert marks.source_app == "com.1password.1password"
    _tool(tmp_path, "osascript", "echo not json")
    assert probe() is None


def test_no_probe_without_a_display_or_tool(tmp_path: Path) -> None:
    assert system_markers(environ={"PATH": str(tmp_path)}, platform="linux") is None
    assert (
        system_markers(environ={"DISPLAY": ":0", "PATH": str(tmp_path)}, platform="linux") is None
    )
    assert system_markers(environ={"PATH": str(tmp_path)}, platform="win32") is None
