"""Exit codes of the ``mnemonic`` command (the shared ``mnemonic.exits``), click's usage
code, the ``--help`` epilog and the mapping from the daemon's HTTP answers."""

from __future__ import annotations

from mnemonic.exits import (
    EX_CONFIG,
    EX_DATAERR,
    EX_OK,
    EX_SOFTWARE,
    EX_TEMPFAIL,
    EX_UNAVAILABLE,
    EX_USAGE,
)

__all__ = [
    "CLICK_USAGE",
    "EPILOG",
    "EX_CONFIG",
    "EX_DATAERR",
    "EX_OK",
    "EX_SOFTWARE",
    "EX_TEMPFAIL",
    "EX_UNAVAILABLE",
    "EX_USAGE",
    "exit_for_status",
]

CLICK_USAGE = 2
"""click's own exit code for a usage error; ``main`` turns it into ``EX_USAGE``."""

EPILOG = (
    "Exit codes: 0 ok; 64 usage error; 65 data error (the daemon refused the input or the "
    "id is unknown); 69 daemon unavailable (not running: start it with 'mnemonic serve'); "
    "70 internal error in the daemon; 75 temporary failure, try again (storage busy or "
    "full, too many clients); 78 configuration error (invalid config.yaml or environment, "
    "token rejected)."
)


def exit_for_status(status: int) -> int:
    """The exit code for an HTTP error answer from the daemon.

    401/403 mean this client's token or config does not match the daemon's (78); 429 and
    503 are explicitly temporary (75); other 4xx blame the input (65), 5xx the daemon (70).
    """
    if status in (401, 403):
        return EX_CONFIG
    if status in (429, 503):
        return EX_TEMPFAIL
    if 400 <= status < 500:
        return EX_DATAERR
    return EX_SOFTWARE
