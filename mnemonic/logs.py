"""Logging, configured once by the composition root.

Human-readable on a terminal, one JSON object per line otherwise (journald, files).
Memory content and secrets are never logged at INFO: modules log ids and counts.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import sys
from pathlib import Path

from mnemonic.private_files import PrivateRotatingFileHandler


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "at": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, ensure_ascii=False)


def setup_logging(level: str, log_dir: Path | None) -> None:
    root = logging.getLogger()
    root.setLevel(level)
    for handler in list(root.handlers):
        root.removeHandler(handler)
    stderr = logging.StreamHandler(sys.stderr)
    if sys.stderr.isatty():
        stderr.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        stderr.setFormatter(JsonFormatter())
    root.addHandler(stderr)
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        file_handler = PrivateRotatingFileHandler(
            log_dir / "mnemonic.log", maxBytes=10 * 1024 * 1024, backupCount=3, encoding="utf-8"
        )
        file_handler.setFormatter(JsonFormatter())
        root.addHandler(file_handler)
