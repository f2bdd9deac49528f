"""Event-loop stall watchdog: logs and counts every stretch the loop could not run.

Everything the daemon answers (``/livez`` included) runs on one event loop, so a
CPU-bound call made on it by mistake (a regex gone quadratic, an encode of a 100 KB text)
freezes every route at once. Two views of the same problem:

* a task sleeps ``interval_s`` at a time and measures how late it wakes up. Lateness over
  ``threshold_s`` is a stall: counted, its length kept (the longest, the last) and logged
  when the loop is back. This sees every stall, but only once it is over, and measures it
  to within ``interval_s`` (a stall that began during a sleep shows up shorter by the part
  of the sleep it overlapped);
* a thread checks the task's heartbeat while the loop is stuck and logs where the loop
  thread is (file, line and function of its innermost frames: code locations, never
  data), so a stall of minutes says where it is while it lasts. A thread needs the GIL to
  run: it sees a loop stuck in Python code or in a call that releases the GIL (I/O,
  ``time.sleep``, numpy, ONNX), but not one stuck inside a single C call that holds it,
  such as one ``re`` match; the task still counts that one afterwards.

Counts are exported by ``/metrics`` (``mnemonic_event_loop_stalls_total``,
``mnemonic_event_loop_longest_stall_seconds``) and by the agent's health detail.

Cost, measured on an idle 2-core machine: about 0.35 % of one core (each wake-up of the
loop costs ~0.2 ms of CPU, hence 0.1 s rather than finer), within the 1 % idle budget.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_FRAMES_SHOWN = 4
_REPEAT_S = 10.0  # a stall still going is reported again this often


class LoopWatchdog:
    """Supervised like an agent: ``run`` until cancelled, ``health`` for its counters."""

    name = "loop-watchdog"

    def __init__(
        self,
        threshold_s: float = 0.25,
        interval_s: float = 0.1,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if threshold_s <= 0 or interval_s <= 0:
            raise ValueError("threshold_s and interval_s must be positive")
        self.threshold_s = threshold_s
        self.interval_s = interval_s
        self._clock = clock
        self._beat = clock()
        self.stalls = 0
        self.longest_s = 0.0
        self.last_s: float | None = None

    async def run(self) -> None:
        stop = threading.Event()
        monitor = threading.Thread(
            target=self._monitor,
            args=(stop, threading.get_ident()),
            name="mnemonic-loop-watchdog",
            daemon=True,
        )
        self._beat = self._clock()
        monitor.start()
        try:
            while True:
                before = self._clock()
                await asyncio.sleep(self.interval_s)
                now = self._clock()
                self._beat = now
                late = now - before - self.interval_s
                if late > self.threshold_s:
                    self.record(late)
        finally:
            stop.set()  # the thread wakes within interval_s and ends by itself

    def record(self, seconds: float) -> None:
        """Count one stall of ``seconds``."""
        self.stalls += 1
        self.last_s = seconds
        self.longest_s = max(self.longest_s, seconds)
        log.warning(
            "event loop stalled for %.3f s (every request waited; stall %d, longest %.3f s)",
            seconds,
            self.stalls,
            self.longest_s,
        )

    def health(self) -> dict[str, Any]:
        return {
            "stalls": self.stalls,
            "longest_stall_s": round(self.longest_s, 3),
            "last_stall_s": None if self.last_s is None else round(self.last_s, 3),
            "threshold_s": self.threshold_s,
        }

    def _monitor(self, stop: threading.Event, loop_thread: int) -> None:
        reported_beat: float | None = None
        reported_at = 0.0
        # the thread only has to notice a stall while it lasts: half the threshold will do
        while not stop.wait(max(self.interval_s, self.threshold_s / 2)):
            beat = self._beat
            now = self._clock()
            stuck = now - beat - self.interval_s
            if stuck <= self.threshold_s:
                continue
            if beat == reported_beat and now - reported_at < _REPEAT_S:
                continue
            reported_beat, reported_at = beat, now
            log.warning("event loop blocked for %.1f s so far, in %s", stuck, where(loop_thread))


def where(thread_id: int) -> str:
    """The innermost frames of a thread as ``file:line in function`` (no values)."""
    frame = sys._current_frames().get(thread_id)
    if frame is None:
        return "an unknown place"
    frames = traceback.extract_stack(frame)[-_FRAMES_SHOWN:]
    return " <- ".join(f"{f.filename}:{f.lineno} in {f.name}" for f in reversed(frames))
