"""The clipboard watcher (off by default): text the user copies, polled through pyperclip.

Each poll reads the text (pyperclip runs ``xclip``/``xsel``/``wl-paste``/``pbpaste`` or a
native API, so it goes to a worker thread). Only when it differs from the last text seen
does the watcher ask the platform how the text is marked, then read it once more: when both
reads agree, the marks belong to that text. Text marked concealed (password managers set
``x-kde-passwordManagerHint`` on X11/Wayland and ``org.nspasteboard.ConcealedType`` on
macOS) becomes ``WatcherEventDropped(reason="concealed")`` only, never an event with the
text; so does text whose marks could not be read (``unverified``) where a check exists.

Where the marks come from:

- X11: ``xclip -selection clipboard -t TARGETS -o``; Wayland: ``wl-paste --list-types``
  (when the binary exists; ``xsel`` cannot list targets).
- macOS: ``osascript -l JavaScript`` reads ``NSPasteboard`` types through the JXA ObjC
  bridge (no pyobjc needed), plus ``org.nspasteboard.source``, the bundle id that
  well-behaved apps put on the pasteboard: the only place the source app is known, so the
  deny-list of password-manager apps applies on macOS only. Written from Apple's and
  nspasteboard.org's documentation; not run on a Mac by this project's tests.
- Windows and anything else: no check (``health().detail["concealment_check"]`` says so).

The first text seen is only remembered, not emitted: it was copied before watching began,
and a restart would otherwise import it again. Repeats of the last text, empty text and
non-text content (pyperclip returns ``""`` for an image) produce nothing.

On a machine without a clipboard, ``pyperclip.paste`` raises ``PyperclipException``
(``is_available()`` says True all the same): the watcher sets its health to ``disabled``,
logs once and returns, so the supervisor does not restart it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from mnemonic.config import ClipboardConfig
from mnemonic.events.types import WatcherEvent, WatcherEventDropped
from mnemonic.runtime.clock import Clock, SystemClock
from mnemonic.watchers.base import Emit, WatcherHealth

log = logging.getLogger(__name__)

WATCHER = "clipboard"


@dataclass(frozen=True, slots=True)
class ClipboardMarks:
    """What the platform says about the clipboard's current content."""

    targets: frozenset[str] = frozenset()
    source_app: str | None = None


Paste = Callable[[], str]
Markers = Callable[[], ClipboardMarks | None]  # None: the check exists but failed


# --- pure rules ---------------------------------------------------------------------------


_BARE_URL = re.compile(r"(?i)(?:https?|ftp|file)://\S{1,4096}")


def is_bare_url(text: str) -> bool:
    """A single URL with nothing around it (surrounding whitespace aside)."""
    return _BARE_URL.fullmatch(text.strip()) is not None


def is_denied_app(source_app: str | None, denied: Collection[str]) -> bool:
    if not source_app:
        return False
    app = source_app.lower()
    return any(name.lower() in app for name in denied if name)


def drop_reason(
    text: str, marks: ClipboardMarks | None, config: ClipboardConfig, *, checked: bool
) -> str | None:
    """Why copied text must not become an event, or None. ``checked`` says whether the
    platform has a concealment check; ``marks`` is None when that check failed."""
    if checked and marks is None:
        return "unverified"
    if marks is not None:
        if not marks.targets.isdisjoint(config.concealed_markers):
            return "concealed"
        if is_denied_app(marks.source_app, config.denied_apps):
            return "denied_app"
    if len(text.encode("utf-8", errors="replace")) > config.max_bytes:
        return "too_large"
    if config.ignore_bare_urls and is_bare_url(text):
        return "bare_url"
    return None


def disabled_reason(exc: BaseException, limit: int = 120) -> str:
    """The first sentence of why the clipboard cannot be read, for one line of health:
    pyperclip's own message goes on to a documentation URL, which says nothing here."""
    text = " ".join(str(exc).split())
    sentence = re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0].rstrip(".") if text else ""
    sentence = sentence or type(exc).__name__
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"


def _fingerprint(text: str) -> bytes:
    """Kept instead of the text, so the last copy (maybe a password) is not held."""
    return hashlib.blake2b(text.encode("utf-8", errors="replace"), digest_size=16).digest()


# --- the platform's concealment markers ---------------------------------------------------------


_MAC_SCRIPT = """
ObjC.import('AppKit');
var pb = $.NSPasteboard.generalPasteboard;
var types = ObjC.unwrap(pb.types) || [];
var source = pb.stringForType('org.nspasteboard.source');
JSON.stringify({types: types.map(function (t) { return ObjC.unwrap(t); }),
                source: source ? ObjC.unwrap(source) : null});
"""


class SystemMarkers:
    """Reads clipboard targets with the platform's tool (see the module docstring)."""

    def __init__(self, name: str, argv: Sequence[str], timeout_s: float) -> None:
        self.name = name
        self._argv = list(argv)
        self._timeout = timeout_s

    def __call__(self) -> ClipboardMarks | None:
        try:
            done = subprocess.run(  # noqa: S603 - a fixed argv, the binary found on PATH
                self._argv, capture_output=True, timeout=self._timeout, check=False
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log.debug("clipboard marks from %s failed: %s", self.name, exc)
            return None
        if done.returncode != 0:
            return None
        output = done.stdout.decode("utf-8", errors="replace")
        if self.name == "osascript":
            return _parse_mac(output)
        return ClipboardMarks(frozenset(t.strip() for t in output.splitlines() if t.strip()))


def _parse_mac(output: str) -> ClipboardMarks | None:
    try:
        raw = json.loads(output)
        types = frozenset(str(t) for t in raw["types"])
        source = raw.get("source")
    except (ValueError, KeyError, TypeError):
        return None
    return ClipboardMarks(types, str(source) if source else None)


def system_markers(
    timeout_s: float = 2.0,
    *,
    environ: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> SystemMarkers | None:
    """The concealment check this machine offers, or None when there is none."""
    env = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    path = env.get("PATH")
    if platform == "darwin":
        found = shutil.which("osascript", path=path)
        argv = [found, "-l", "JavaScript", "-e", _MAC_SCRIPT] if found else None
        return SystemMarkers("osascript", argv, timeout_s) if argv else None
    if platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        if env.get("WAYLAND_DISPLAY") and (found := shutil.which("wl-paste", path=path)):
            return SystemMarkers("wl-paste", [found, "--list-types"], timeout_s)
        if env.get("DISPLAY") and (found := shutil.which("xclip", path=path)):
            argv = [found, "-selection", "clipboard", "-t", "TARGETS", "-o"]
            return SystemMarkers("xclip", argv, timeout_s)
    return None


def pyperclip_paste() -> str:
    """``pyperclip.paste`` looked up at call time: pyperclip swaps its module attribute for
    the real mechanism on first use."""
    import pyperclip

    text = pyperclip.paste()
    return text if isinstance(text, str) else ""


def _clipboard_errors() -> tuple[type[BaseException], ...]:
    import pyperclip

    return (pyperclip.PyperclipException, OSError)


# --- the watcher --------------------------------------------------------------------------------


class ClipboardWatcher:
    """Polls the clipboard and emits ``WatcherEvent(kind="copy")`` for new copied text."""

    name = WATCHER

    def __init__(
        self,
        config: ClipboardConfig,
        *,
        paste: Paste | None = None,
        markers: Markers | Literal["system"] | None = "system",
        clock: Clock | None = None,
    ) -> None:
        """``paste`` and ``markers`` are the pyperclip and platform boundaries: "system"
        finds this machine's concealment check; None means there is none."""
        self._config = config
        self._paste = paste or pyperclip_paste
        if markers == "system":
            markers = system_markers(config.probe_timeout_s)
        self._markers: Markers | None = markers
        self._clock = clock or SystemClock()
        self._last: bytes | None = None
        self._seen_any = False
        self._failing = False
        self._dropped: Counter[str] = Counter()
        self._polls = 0
        self._health = WatcherHealth()

    def health(self) -> WatcherHealth:
        check = getattr(self._markers, "name", "custom") if self._markers else "unavailable"
        self._health.detail = {
            "polls": self._polls,
            "dropped": dict(self._dropped),
            "concealment_check": check,
        }
        return self._health

    async def run(self, emit: Emit) -> None:
        errors = _clipboard_errors()
        self._health.state = "running"
        try:
            while True:
                try:
                    await self._poll(emit)
                except errors as exc:
                    if not self._seen_any:
                        self._disable(exc)
                        return
                    self._degrade(exc)
                self._polls += 1
                await self._clock.sleep(self._config.poll_interval_s)
        finally:
            if self._health.state != "disabled":
                self._health.state = "stopped"

    async def _poll(self, emit: Emit) -> None:
        text = await asyncio.to_thread(self._paste)
        self._recover()
        first = not self._seen_any
        self._seen_any = True
        fingerprint = _fingerprint(text)
        if fingerprint == self._last:
            return
        if not text.strip():  # empty, or not text at all: nothing to check
            self._last = fingerprint
            return
        marks = await asyncio.to_thread(self._markers) if self._markers else None
        if self._markers and _fingerprint(await asyncio.to_thread(self._paste)) != fingerprint:
            return  # changed while the marks were read; the next poll decides
        self._last = fingerprint
        if first:
            return
        reason = drop_reason(text, marks, self._config, checked=self._markers is not None)
        if reason is not None:
            self._dropped[reason] += 1
            emit(WatcherEventDropped(watcher=WATCHER, kind="copy", reason=reason))
            return
        emit(
            WatcherEvent(watcher=WATCHER, kind="copy", content=text, metadata={"chars": len(text)})
        )
        self._health.events += 1

    def _disable(self, exc: BaseException) -> None:
        why = disabled_reason(exc)
        self._health.state = "disabled"
        self._health.message = (
            f"no clipboard here ({why}); install xclip, xsel or wl-clipboard "
            "in a desktop session, or set clipboard.enabled: false"
        )
        self._health.warnings += 1
        log.warning("clipboard watcher disabled: %s", why)

    def _degrade(self, exc: BaseException) -> None:
        if not self._failing:
            self._failing = True
            self._health.state = "degraded"
            self._health.message = f"clipboard unreadable: {type(exc).__name__}"
            self._health.warnings += 1
            log.warning("clipboard read failed (%s); retrying", type(exc).__name__)

    def _recover(self) -> None:
        if self._failing:
            self._failing = False
            self._health.state = "running"
            self._health.message = None
            log.info("clipboard readable again")
