"""Wait for a freshly started daemon to answer ``/readyz``.

The service manager saying "started" is not the same as the daemon answering requests
(launchd has no readiness protocol at all), so install polls the real endpoint.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when used: the CLI loads this module for every command
    import httpx

#: How often a progress callback hears about a wait that is still going on.
PROGRESS_EVERY_S = 5.0


def answers(http: httpx.Client, url: str) -> int | None:
    """The HTTP status ``url`` answers with, or ``None`` when nothing listens."""
    import httpx

    try:
        return http.get(url).status_code
    except httpx.HTTPError:
        return None


def wait_ready(
    url: str,
    timeout_s: float,
    on_progress: Callable[[float], None] | None = None,
    interval_s: float = 0.2,
    progress_every_s: float = PROGRESS_EVERY_S,
) -> float | None:
    """Poll ``url`` until it answers 200; seconds it took, or ``None`` after ``timeout_s``.

    ``on_progress(elapsed)`` is called every few seconds so a person sees the wait move.
    """
    import httpx

    started = time.monotonic()
    next_progress = started + progress_every_s
    # one client (building one costs ~20 ms); no proxy from the environment for loopback
    with httpx.Client(timeout=1.0, trust_env=False) as http:
        while True:
            if answers(http, url) == 200:
                return time.monotonic() - started
            now = time.monotonic()
            if now - started >= timeout_s:
                return None
            if on_progress is not None and now >= next_progress:
                on_progress(now - started)
                next_progress = now + progress_every_s
            time.sleep(min(interval_s, max(0.0, timeout_s - (now - started))))
