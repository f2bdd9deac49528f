"""``/docs``: a small offline API reference page that renders ``/openapi.json``.

Written for this project rather than vendored: Swagger UI (Apache-2.0) and Redoc (MIT) would
each add a megabyte-scale minified bundle to the wheel, while this page (HTML, one script,
one stylesheet) is about 12 kB and needs nothing from the network. A strict Content-Security-Policy
(``default-src 'self'``, no inline script or style) makes the browser refuse any external
load, so the page provably works offline.

The files live in ``web/docs/`` of a checkout and ship in the wheel as
``mnemonic/_web/docs/``. They are read once, when the routes are built.
"""

from __future__ import annotations

import logging
from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

log = logging.getLogger(__name__)

ASSETS = {
    "docs.js": "text/javascript; charset=utf-8",
    "docs.css": "text/css; charset=utf-8",
}
PAGE = "index.html"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}


def web_dir() -> Path:
    """``mnemonic/_web`` when installed from a wheel, else ``<checkout>/web``."""
    packaged = Path(__file__).resolve().parents[1] / "_web"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "web"


def _load(folder: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for name in (PAGE, *ASSETS):
        path = folder / name
        try:
            files[name] = path.read_bytes()
        except OSError:
            log.warning("docs page file missing: %s", path)
    return files


def _missing(what: str) -> Response:
    return JSONResponse({"error": f"{what} not found", "status": 404}, status_code=404)


def docs_routes(folder: Path | None = None) -> list[Route]:
    """``GET /docs`` and ``GET /docs/{asset}``, served from memory."""
    files = _load(folder or web_dir() / "docs")

    async def page(request: Request) -> Response:
        if PAGE not in files:
            return _missing("docs page (not installed)")
        headers = {**SECURITY_HEADERS, "content-type": "text/html; charset=utf-8"}
        return Response(files[PAGE], headers=headers)

    async def asset(request: Request) -> Response:
        name = request.path_params["asset"]
        if name not in ASSETS or name not in files:
            return _missing(f"asset {name!r}")
        headers = {**SECURITY_HEADERS, "content-type": ASSETS[name]}
        return Response(files[name], headers=headers)

    return [
        Route("/docs", page, methods=["GET"]),
        Route("/docs/{asset}", asset, methods=["GET"]),
    ]
