"""What the embedding and completion clients say about an HTTP endpoint: its URL without
credentials, and the server's own error message. One copy for both clients."""

from __future__ import annotations

import json
from urllib.parse import urlsplit, urlunsplit


def redact_url(url: str) -> str:
    """The URL without credentials or query, fit for logs and messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", "")) or "<no url>"


def error_detail(body: object, limit: int = 200) -> str:
    """The server's own error message from an error body (OpenAI style or plain)."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            message = error.get("message") or error.get("detail") or ""
            return str(message)[:limit]
        return str(error)[:limit]
    if isinstance(body, bytes):
        body = body.decode(errors="replace")
    if isinstance(body, str):
        return " ".join(body.split())[:limit]
    return "" if body is None else json.dumps(body, default=str)[:limit]
