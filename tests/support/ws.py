"""A ``/ws`` client for tests against a real daemon process."""

from __future__ import annotations

import threading

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from support.daemon_proc import TOKEN


class FrameRecorder:
    """Every text frame of one ``/ws`` connection, collected on a thread."""

    def __init__(self, url: str) -> None:
        self.frames: list[str] = []
        self._ws = connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"})
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for message in self._ws:
                self.frames.append(message if isinstance(message, str) else message.decode())
        except ConnectionClosed:
            pass

    def close(self) -> None:
        self._ws.close()
        self._thread.join(timeout=10)
