"""The API token: one rule for the daemon that checks it and the CLI that sends it.

``MNEMONIC_TOKEN`` wins when it holds anything besides whitespace; else the token file in
the config folder. A blank variable or an empty file never yields an empty token: the
daemon would otherwise accept ``Authorization: Bearer`` with nothing after it.
"""

from __future__ import annotations

import os
import secrets

from mnemonic.paths import Paths

TOKEN_ENV = "MNEMONIC_TOKEN"  # noqa: S105 - the variable's name, not a secret


def configured_token(paths: Paths, env_token: str | None) -> str:
    """The token in effect, or "" when there is none yet."""
    if env_token and env_token.strip():
        return env_token.strip()
    try:
        return paths.token_file.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""


def load_or_create_token(paths: Paths, env_token: str | None) -> str:
    """The token in effect; without one, a new random token in a 0600 file (a blank file
    is replaced)."""
    token = configured_token(paths, env_token)
    if token:
        return token
    path = paths.token_file
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    token = secrets.token_urlsafe(32)
    path.unlink(missing_ok=True)  # a blank file: O_EXCL keeps a racing writer from sharing it
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token
