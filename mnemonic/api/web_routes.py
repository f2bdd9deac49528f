"""The dashboard: its static files at ``/`` and the one-time login that opens a session.

* ``GET /``, ``/app.js``, ``/style.css``, ``/lib/...``, ``/views/...``, ``/vendor/...``: the
  files of ``web/`` (``mnemonic/_web`` in a wheel), read from disk on each request so a
  checkout serves what is on disk. Only known file types, never outside their folder (a
  ``..`` or a symlink out answers 404), each with a strict Content-Security-Policy: no
  inline script or style, nothing loaded from another origin, no framing.
* ``POST /api/v1/dashboard/login-links`` (bearer token only): a one-time login URL, which
  ``mnemonic open`` opens in the browser;
* ``GET /login?code=...``: burns the code, sets the session and CSRF cookies
  (``session.py``) and redirects to ``/``.

The files themselves are not secret (they are the project's source); every byte of memory
data they show comes through the API, which needs the session.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from mnemonic.api.docs import web_dir
from mnemonic.api.security import LOOPBACK_NAMES
from mnemonic.api.session import WebAuth, cleared_cookies, session_cookies

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".woff2": "font/woff2",
}
FOLDERS = ("lib", "views", "vendor")
TOP_FILES = ("app.js", "style.css")
VIEW_LISTING = "index.json"
MAX_NAME = 512
SMALL_FILE = 64 * 1024
_VIEW_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,40}$")


def csp(port: int) -> str:
    """``connect-src`` names the WebSocket origins too: ``'self'`` covers ``ws:`` of the same
    host only in newer browsers."""
    # CSP has no syntax for an IPv6 literal host; ``'self'`` covers ``[::1]`` in browsers
    # that match ``ws:`` against it
    sockets = " ".join(f"ws://{name}:{port}" for name in LOOPBACK_NAMES if "[" not in name)
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self' {sockets}; worker-src 'self'; object-src 'none'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


def security_headers(port: int) -> dict[str, str]:
    return {
        "content-security-policy": csp(port),
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "x-frame-options": "DENY",
        "cross-origin-opener-policy": "same-origin",
        "cross-origin-resource-policy": "same-origin",
        "cache-control": "no-cache",
    }


class SessionInfo(BaseModel):
    auth: Literal["bearer", "session"] = Field(description="How this request proved itself.")


class LoggedOut(BaseModel):
    ended: bool = Field(description="Whether the request named a live session.")


class LoginLink(BaseModel):
    url: str = Field(description="Open once, within `expires_in_s`, to start a session.")
    expires_in_s: float = Field(description="Seconds the link stays valid.")


def resolve_static(root: Path, folder: str, name: str) -> Path | None:
    """The file ``root/folder/name`` if it is a servable file inside ``root/folder``.

    Refused: a name with a hidden or empty segment (``..``, ``.env``), a backslash or NUL,
    a type not in ``CONTENT_TYPES``, anything whose real path (symlinks followed) leaves
    the folder."""
    if not name or len(name) > MAX_NAME or "\\" in name or "\x00" in name:
        return None
    parts = name.split("/")
    if any(not p or p.startswith(".") for p in parts):
        return None
    base = (root / folder).resolve() if folder else root.resolve()
    target = (base / name).resolve()
    if not target.is_relative_to(base) or target.suffix not in CONTENT_TYPES:
        return None
    try:
        return target if target.is_file() else None
    except OSError:  # a segment longer than the file system allows, say
        return None


def view_listing(views: Path) -> dict[str, dict[str, dict[str, bool]]]:
    """Which view modules exist and which have a stylesheet: the shell asks before it
    imports, so a view not built yet (or without CSS) costs no failing request."""
    found: dict[str, dict[str, bool]] = {}
    try:
        entries = sorted(views.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        if entry.suffix in (".js", ".css") and entry.is_file() and _VIEW_NAME.match(entry.stem):
            found.setdefault(entry.stem, {"js": False, "css": False})[entry.suffix[1:]] = True
    return {"views": found}


def _missing() -> Response:
    return JSONResponse({"error": "not found", "status": 404}, status_code=404)


def build_web_routes(auth: WebAuth, *, port: int, root: Path | None = None) -> list[Route]:
    """Routes of the dashboard; ``root`` is the ``web/`` folder (tests pass their own)."""
    folder = root or web_dir()
    headers = security_headers(port)

    def serve(path: Path | None) -> Response:
        if path is None:
            return _missing()
        media_type = CONTENT_TYPES[path.suffix]
        try:
            size = path.stat().st_size
            if size <= SMALL_FILE:
                # a page load asks for a dozen small modules one after another: read in
                # place (microseconds from the page cache) instead of two thread hops each
                return Response(path.read_bytes(), media_type=media_type, headers=headers)
        except OSError:
            return _missing()
        return FileResponse(path, media_type=media_type, headers=headers)

    async def index(request: Request) -> Response:
        return serve(resolve_static(folder, "", "index.html"))

    async def top_file(request: Request) -> Response:
        return serve(resolve_static(folder, "", request.url.path.lstrip("/")))

    def in_folder(name: str) -> Route:
        async def endpoint(request: Request) -> Response:
            file = request.path_params["file"]
            if name == "views" and file == VIEW_LISTING:
                return JSONResponse(view_listing(folder / "views"), headers=headers)
            return serve(resolve_static(folder, name, file))

        return Route(f"/{name}/{{file:path}}", endpoint, methods=["GET"])

    async def login_link(request: Request) -> Response:
        if request.scope.get("mnemonic.auth") != "bearer":
            # a session must not mint more sessions (a stolen page could keep itself alive)
            return JSONResponse(
                {"error": "forbidden: login links need the bearer token", "status": 403},
                status_code=403,
            )
        link = auth.mint_login()
        host = request.headers.get("host", f"127.0.0.1:{port}")
        body = LoginLink(
            url=f"http://{host}/login?code={link.code}", expires_in_s=link.expires_in_s
        )
        return JSONResponse(
            body.model_dump(), status_code=201, headers={"cache-control": "no-store"}
        )

    async def login(request: Request) -> Response:
        code = request.query_params.get("code", "")
        redeemed = auth.redeem_login(code) if 0 < len(code) <= 128 else None
        if redeemed is None:
            text = (
                "this login link is unknown, used or expired (links work once, for two "
                "minutes); run `mnemonic open` for a new one"
            )
            return JSONResponse(
                {"error": text, "status": 403},
                status_code=403,
                headers={**headers, "cache-control": "no-store"},
            )
        session_id, csrf = redeemed
        response = Response(
            status_code=303,
            headers={**headers, "location": "/", "cache-control": "no-store"},
        )
        for cookie in session_cookies(session_id, csrf, int(auth.session_ttl_s)):
            response.raw_headers.append((b"set-cookie", cookie.encode("latin-1")))
        return response

    async def whoami(request: Request) -> Response:
        """The shell's "am I logged in?" probe: answers from memory, so it never waits
        behind a slow query the way a data route can."""
        return JSONResponse({"auth": request.scope.get("mnemonic.auth", "bearer")})

    async def logout(request: Request) -> Response:
        ended = auth.end_session(request.headers.get("cookie", "").encode("latin-1"))
        response = JSONResponse(LoggedOut(ended=ended).model_dump())
        for cookie in cleared_cookies():
            response.raw_headers.append((b"set-cookie", cookie.encode("latin-1")))
        return response

    return [
        Route("/", index, methods=["GET"]),
        *(Route(f"/{name}", top_file, methods=["GET"]) for name in TOP_FILES),
        *(in_folder(name) for name in FOLDERS),
        Route("/login", login, methods=["GET"]),
        Route("/api/v1/dashboard/login-links", login_link, methods=["POST"]),
        Route("/api/v1/dashboard/session", whoami, methods=["GET"]),
        Route("/api/v1/dashboard/logout", logout, methods=["POST"]),
    ]
