"""Secret redaction, applied on every write path before anything is stored or sent.

``redact(text)`` replaces secrets in place by ``[REDACTED:kind]`` markers and reports what
it took out (kinds and spans, never the values); ``redact_json(value, redact_text)`` does
the same to metadata and also hides whole values under secret-looking keys
(:mod:`mnemonic.redact.keys`); ``is_secret_path(path)`` says whether a file's contents must
be dropped entirely. See :mod:`mnemonic.redact.rules` for what counts as a secret and
:mod:`mnemonic.redact.engine` for how long input is handled.
"""

from __future__ import annotations

from mnemonic.redact.engine import (
    MAX_INPUT_CHARS,
    WINDOW_OVERLAP,
    Finding,
    Redaction,
    marker,
    redact,
    redact_json,
)
from mnemonic.redact.paths import is_secret_path
from mnemonic.redact.rules import KINDS

__all__ = [
    "KINDS",
    "MAX_INPUT_CHARS",
    "WINDOW_OVERLAP",
    "Finding",
    "Redaction",
    "is_secret_path",
    "marker",
    "redact",
    "redact_json",
]
