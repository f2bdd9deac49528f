"""Which JSON keys name a secret, and what a value under one becomes.

Text redaction finds a secret by its shape or by the name written next to it
(``password=...``); in structured metadata the name is the *key*, which the text rules
never see next to the value: ``{"AWS_SECRET_ACCESS_KEY": "..."}`` or
``{"db": {"password": "..."}}`` would come back in clear. So a key is split into words
(camelCase, ``-``, ``_``, ``.``, spaces) and judged by its last word, the head of an
English compound: ``db_password``, ``clientSecret``, ``GITHUB_TOKEN`` and ``x-api-key``
name secrets; ``password_file``, ``secretName``, ``token_count`` and ``max_tokens`` name
things about secrets. A few heads count only with a qualifier before them: ``key``
(``api_key``, ``private_key``, not ``cache_key``), ``pass`` (``db_pass``, not
``first_pass``), ``tokens`` (``access_tokens``, not LLM usage counters such as
``input_tokens``), and ``token`` is not a secret after ``max``, ``eos``, ``page``...
(model settings and pagination cursors fill agent metadata).

Pure functions, no state: the engine's :func:`~mnemonic.redact.engine.redact_json` walks
the structure and asks :func:`is_secret_key` and :func:`secret_scalar` here.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from mnemonic.redact.rules import FIELD_KIND, is_placeholder, looks_like_path

KEY_TAIL_CHARS = 256
"""Only the end of a longer key is read: the head word and its qualifiers are there, and
the cost per key stays bounded."""

_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}\]")
# camelCase humps, ACRONYMRuns, lower runs, digit runs; anything else separates words
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

# Heads that name a secret whatever precedes them.
_HEADS = frozenset(
    {
        "password",
        "passwords",
        "passwd",
        "passphrase",
        "passcode",
        "pwd",
        "pw",
        "apikey",
        "apikeys",
        "privatekey",
        "secretkey",
        "secret",
        "secrets",
        "credential",
        "credentials",
        "creds",
        "authorization",
        "cookie",
        "cookies",
    }
)
# Heads written as one word (PGPASSWORD, apikey, clientSecret is split already).
_JOINED_HEADS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "apikey",
    "secretkey",
    "privatekey",
    "accesskey",
)
# "...token" written as one word: the part before it.
_JOINED_TOKEN_PREFIXES = (
    "auth",
    "access",
    "refresh",
    "bearer",
    "api",
    "id",
    "csrf",
    "xsrf",
    "oauth",
    "session",
    "bot",
    "app",
    "security",
    "personal",
)
# A "token" after these words is a count, a model setting or a pagination cursor.
_TOKEN_NOT = frozenset(
    {
        "max",
        "min",
        "num",
        "total",
        "input",
        "output",
        "prompt",
        "completion",
        "reasoning",
        "cache",
        "cached",
        "page",
        "next",
        "prev",
        "previous",
        "continuation",
        "cursor",
        "sync",
        "start",
        "end",
        "stop",
        "special",
        "bos",
        "eos",
        "pad",
        "unk",
        "sep",
        "cls",
        "mask",
        "first",
        "last",
        "per",
        "cancellation",
    }
)
# "tokens" (plural) names credentials only after these; otherwise it counts LLM tokens.
_TOKENS_OK = frozenset(
    {"access", "auth", "refresh", "bearer", "api", "oauth", "session", "id", "personal"}
)
# "key" names a secret only after these (api_key, AWS_SECRET_ACCESS_KEY, private_key).
_KEY_QUALIFIERS = frozenset(
    {
        "api",
        "secret",
        "private",
        "access",
        "signing",
        "encryption",
        "master",
        "auth",
        "hmac",
        "app",
        "license",
        "client",
        "session",
        "account",
        "ssh",
        "deploy",
    }
)
# "value"/"string"/"data" name a secret only after these (secret_value, SecretString).
_VALUE_QUALIFIERS = frozenset({"secret", "password", "token", "credential", "credentials"})
# "pass" names a password only alone or after these (DB_PASS, SMTP_PASS; not first_pass).
_PASS_QUALIFIERS = frozenset(
    {
        "db",
        "database",
        "user",
        "admin",
        "root",
        "login",
        "smtp",
        "mail",
        "email",
        "ftp",
        "sftp",
        "proxy",
        "ldap",
        "redis",
        "mysql",
        "pg",
        "postgres",
        "mongo",
        "amqp",
        "rabbitmq",
        "auth",
        "basic",
        "http",
        "wifi",
        "vnc",
        "sudo",
        "ssh",
    }
)
# Provider variable names the word rules above do not reach, normalised.
_PROVIDER_NAMES = frozenset(
    {
        "azure_storage_key",
        "azure_storage_connection_string",
        "docker_auth_config",
        "npm_config_auth",
        "auth",  # .npmrc's _auth: base64 user:password
    }
)
_PUBLIC = frozenset({"public", "publishable"})


def key_words(key: str) -> list[str]:
    """``key`` as lower-case words, markers and trailing numbers dropped.

    ``AWS_SECRET_ACCESS_KEY`` -> aws secret access key; ``clientSecret`` -> client secret;
    ``x-api-key`` -> x api key; ``APIKey2`` -> api key. A marker that redaction put into
    the key is no word of it, so a key is judged the same before and after redaction.
    """
    if "[REDACTED:" in key:
        key = _MARKER.sub(" ", key)  # before cutting, so no half marker is left to read
    words = [w.lower() for w in _WORD.findall(key[-KEY_TAIL_CHARS:])]
    while words and words[-1].isdigit():
        words.pop()
    return words


def is_secret_key(key: str) -> bool:
    """Whether a JSON key names a secret, so its whole value must go (see the module)."""
    if "[REDACTED:" in key:
        key = _MARKER.sub(" ", key)
    return _judge(key[-KEY_TAIL_CHARS:])


@lru_cache(maxsize=4096)
def _judge(key: str) -> bool:
    """:func:`is_secret_key` on a key without markers, at most :data:`KEY_TAIL_CHARS` long.

    Cached: metadata repeats the same few dozen key names event after event, and the
    cache holds short strings only.
    """
    words = key_words(key)
    if not words or _PUBLIC.intersection(words):
        return False
    head = words[-1]
    before = words[-2] if len(words) > 1 else ""
    if head in _HEADS or "_".join(words) in _PROVIDER_NAMES:
        return True
    if head == "token":
        return before not in _TOKEN_NOT
    if head == "tokens":
        return before in _TOKENS_OK
    if head in ("key", "keys"):
        return before in _KEY_QUALIFIERS
    if head in ("value", "string", "data"):
        return before in _VALUE_QUALIFIERS
    if head == "pass":
        return not before or before in _PASS_QUALIFIERS
    if head.endswith("token") and head[:-5] in _JOINED_TOKEN_PREFIXES:
        return True
    return any(head.endswith(h) and len(head) > len(h) for h in _JOINED_HEADS)


SECRET_MARKER = f"[REDACTED:{FIELD_KIND}]"
"""What a scalar under a secret key becomes."""


def secret_scalar(value: Any) -> Any:
    """What a scalar found under a secret key becomes: :data:`SECRET_MARKER`, or the value
    itself when it carries nothing to hide.

    Kept: ``None`` and booleans (``"password": true`` says a password is set), empty and
    placeholder strings (``"${DB_PASSWORD}"``, ``"changeme"``, a marker already there, so
    redacting twice changes nothing) and file paths (``"/run/secrets/db"`` says where a
    secret lives), like the text rules keep them. Numbers go: a PIN or a numeric password
    is a secret too. Returns the value unchanged (the caller still redacts a kept string's
    text) or the marker.
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        if is_placeholder(value) or looks_like_path(value.strip()):
            return value
        return SECRET_MARKER
    return SECRET_MARKER
