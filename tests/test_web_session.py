"""The dashboard's serving and login without a browser: static files (types, headers, no
path traversal), one-time login links, session cookies, CSRF, bearer tokens still working,
``/ws`` with the cookie, token rotation ending sessions, and ``mnemonic open``."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient
from support.api import BASE_URL, TOKEN, sibling
from support.daemon_proc import TOKEN as PROC_TOKEN
from support.daemon_proc import DaemonProc, running

from mnemonic.api.session import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    WebAuth,
    cookie_value,
    csrf_ok,
    session_cookies,
)
from mnemonic.api.web_routes import resolve_static, view_listing
from mnemonic.cli.open_cmd import with_view

# ---- pure parts -----------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        (b"", None),
        (b"mnemonic_session=abc", "abc"),
        (b"a=1; mnemonic_session=abc; b=2", "abc"),
        (b"mnemonic_sessionx=abc", None),
        (b'a="unterminated; mnemonic_session=zz', None),
        (b"\xff\xfe=junk", None),
    ],
)
def test_cookie_value(header: bytes | None, expected: str | None) -> None:
    assert cookie_value(header, SESSION_COOKIE) == expected


def _cookie(session_id: str) -> bytes:
    return f"{SESSION_COOKIE}={session_id}".encode()


def test_login_code_works_once_and_expires() -> None:
    clock = Clock()
    auth = WebAuth("tok-123", clock=clock)
    link = auth.mint_login()
    assert link.expires_in_s == 120
    redeemed = auth.redeem_login(link.code)
    assert redeemed is not None
    assert auth.redeem_login(link.code) is None  # burnt
    late = auth.mint_login()
    clock.now += 121
    assert auth.redeem_login(late.code) is None  # expired
    assert auth.redeem_login("never-minted") is None
    session_id, csrf = redeemed
    session = auth.session_of(_cookie(session_id))
    assert session is not None and csrf_ok(session, csrf.encode())
    assert not csrf_ok(session, b"wrong") and not csrf_ok(session, None)


def test_sessions_expire_when_idle_and_end_on_rotation() -> None:
    clock = Clock()
    auth = WebAuth("tok-123", clock=clock, session_ttl_s=60)
    first = auth.redeem_login(auth.mint_login().code)
    second = auth.redeem_login(auth.mint_login().code)
    assert first and second
    clock.now += 50
    assert auth.session_of(_cookie(first[0])) is not None  # use extends it
    clock.now += 50
    assert auth.session_of(_cookie(first[0])) is not None
    assert auth.session_of(_cookie(second[0])) is None  # idle past its TTL
    pending = auth.mint_login()
    assert auth.set_token("tok-456") == 1
    assert auth.session_of(_cookie(first[0])) is None
    assert auth.redeem_login(pending.code) is None
    assert auth.bearer_ok(b"Bearer tok-456") and not auth.bearer_ok(b"Bearer tok-123")
    with pytest.raises(ValueError, match="empty"):
        auth.set_token("  ")


def test_session_cookie_flags() -> None:
    session, csrf = session_cookies("s1", "c1", 60)
    assert session.startswith(f"{SESSION_COOKIE}=s1;")
    assert "HttpOnly" in session and "SameSite=Strict" in session and "Path=/" in session
    assert csrf.startswith(f"{CSRF_COOKIE}=c1;") and "HttpOnly" not in csrf


@pytest.mark.parametrize(
    ("folder", "name", "ok"),
    [
        ("lib", "dom.js", True),
        ("", "index.html", True),
        ("lib", "../app.js", False),
        ("lib", "../../pyproject.toml", False),
        ("lib", "/etc/passwd", False),
        ("lib", "sub//x.js", False),
        ("lib", ".hidden.js", False),
        ("lib", "dom.js\x00.png", False),
        ("lib", "..\\app.js", False),
        ("lib", "missing.js", False),
        ("", "secret.txt", False),  # not a served type
        ("lib", "link.js", False),  # a symlink out of the folder
        ("lib", "a" * 300 + ".js", False),  # longer than a file name may be
        ("lib", "x/" * 300 + "y.js", False),
    ],
)
def test_resolve_static(tmp_path: Path, folder: str, name: str, ok: bool) -> None:
    root = tmp_path / "web"
    (root / "lib").mkdir(parents=True)
    (root / "index.html").write_text("<p>x</p>")
    (root / "app.js").write_text("//")
    (root / "secret.txt").write_text("x")
    (root / "lib" / "dom.js").write_text("//")
    (root / "lib" / ".hidden.js").write_text("//")
    (tmp_path / "outside.js").write_text("//")
    (root / "lib" / "link.js").symlink_to(tmp_path / "outside.js")
    found = resolve_static(root, folder, name)
    assert (found is not None) is ok


def test_view_listing(tmp_path: Path) -> None:
    (tmp_path / "search.js").write_text("//")
    (tmp_path / "search.css").write_text("")
    (tmp_path / "graph.js").write_text("//")
    (tmp_path / "Bad Name.js").write_text("//")
    (tmp_path / "notes.txt").write_text("")
    assert view_listing(tmp_path) == {
        "views": {"graph": {"js": True, "css": False}, "search": {"js": True, "css": True}}
    }
    assert view_listing(tmp_path / "missing") == {"views": {}}


def test_with_view() -> None:
    assert with_view("http://127.0.0.1:1/login?code=x", None) == "http://127.0.0.1:1/login?code=x"
    assert with_view("http://h/login?code=x", "live") == "http://h/login?code=x#/live"


# ---- over HTTP (TestClient on a real daemon) ------------------------------------------


@pytest.fixture
def anonymous(client: TestClient) -> Iterator[TestClient]:
    yield sibling(client, base_url=BASE_URL, follow_redirects=False)


def _login(client: TestClient, anonymous: TestClient) -> tuple[str, str]:
    """(cookie header, csrf token) of a fresh session."""
    link = client.post("/api/v1/dashboard/login-links")
    assert link.status_code == 201, link.text
    url = link.json()["url"]
    assert url.startswith(f"{BASE_URL}/login?code=")
    answer = anonymous.get(url.removeprefix(BASE_URL))
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    cookies = {c.split("=", 1)[0]: c for c in answer.headers.get_list("set-cookie")}
    session = cookies[SESSION_COOKIE].split(";")[0]
    csrf = cookies[CSRF_COOKIE].split(";")[0].split("=", 1)[1]
    anonymous.cookies.clear()
    return f"{session}; {CSRF_COOKIE}={csrf}", csrf


WS = BASE_URL.replace("http://", "ws://", 1)

CONTENT_TYPES = {
    "/": "text/html",
    "/app.js": "text/javascript",
    "/style.css": "text/css",
    "/lib/dom.js": "text/javascript",
    "/lib/widgets.js": "text/javascript",
    "/views/search.js": "text/javascript",
    "/views/live.css": "text/css",
    "/vendor/MANIFEST.json": "application/json",
    "/views/index.json": "application/json",
}


def test_static_files_have_types_and_security_headers(anonymous: TestClient) -> None:
    for path, ctype in CONTENT_TYPES.items():
        answer = anonymous.get(path)
        assert answer.status_code == 200, path
        assert answer.headers["content-type"].startswith(ctype), path
        csp = answer.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert re.search(r"connect-src 'self' ws://127\.0\.0\.1:\d+", csp)
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"
    assert anonymous.head("/app.js").status_code == 200
    listing = anonymous.get("/views/index.json").json()["views"]
    assert listing["search"] == {"js": True, "css": True}


@pytest.mark.parametrize(
    "path",
    [
        "/lib/../../pyproject.toml",
        "/lib/%2e%2e/%2e%2e/pyproject.toml",
        "/views/..%2f..%2fpyproject.toml",
        "/vendor/%2e%2e%2f%2e%2e%2fmnemonic/config.py",
        "/lib/..%5c..%5cpyproject.toml",
        "/lib/%00.js",
        "/views/.hidden.js",
        "/docs/../pyproject.toml",
        "/lib/",
        "/nope.js",
    ],
)
def test_no_path_traversal(anonymous: TestClient, path: str) -> None:
    answer = anonymous.get(path)
    assert answer.status_code == 404, (path, answer.status_code)
    assert b"[project]" not in answer.content


def test_static_files_check_host_and_origin(anonymous: TestClient) -> None:
    assert anonymous.get("/", headers={"Host": "evil.example"}).status_code == 403
    assert anonymous.get("/app.js", headers={"Origin": "http://evil.example"}).status_code == 403


def test_login_link_needs_the_bearer_token(client: TestClient, anonymous: TestClient) -> None:
    assert anonymous.post("/api/v1/dashboard/login-links").status_code == 401
    cookie, csrf = _login(client, anonymous)
    # a session cannot mint sessions
    answer = anonymous.post(
        "/api/v1/dashboard/login-links", headers={"Cookie": cookie, "X-CSRF-Token": csrf}
    )
    assert answer.status_code == 403
    assert client.post("/api/v1/dashboard/login-links").headers["cache-control"] == "no-store"


def test_login_link_works_once(client: TestClient, anonymous: TestClient) -> None:
    url = client.post("/api/v1/dashboard/login-links").json()["url"].removeprefix(BASE_URL)
    assert anonymous.get(url).status_code == 303
    again = anonymous.get(url)
    assert again.status_code == 403 and "mnemonic open" in again.json()["error"]
    assert "set-cookie" not in again.headers
    assert anonymous.get("/login").status_code == 403
    assert anonymous.get("/login?code=" + "x" * 500).status_code == 403


def test_login_link_expires(client: TestClient, anonymous: TestClient) -> None:
    auth: WebAuth = client.app.state.auth  # type: ignore[attr-defined]
    url = client.post("/api/v1/dashboard/login-links").json()["url"].removeprefix(BASE_URL)
    real = auth.clock
    auth.clock = lambda: real() + 121
    try:
        assert anonymous.get(url).status_code == 403
    finally:
        auth.clock = real


def test_session_reads_and_writes_with_csrf(client: TestClient, anonymous: TestClient) -> None:
    cookie, csrf = _login(client, anonymous)
    assert anonymous.get("/api/v1/stats").status_code == 401
    assert anonymous.get("/api/v1/stats", headers={"Cookie": cookie}).status_code == 200
    body = {"content": "A memory written by the dashboard session."}
    no_csrf = anonymous.post("/api/v1/memories", json=body, headers={"Cookie": cookie})
    assert no_csrf.status_code == 403 and "CSRF" in no_csrf.json()["error"]
    wrong = anonymous.post(
        "/api/v1/memories", json=body, headers={"Cookie": cookie, "X-CSRF-Token": "nope"}
    )
    assert wrong.status_code == 403
    ok = anonymous.post(
        "/api/v1/memories", json=body, headers={"Cookie": cookie, "X-CSRF-Token": csrf}
    )
    assert ok.status_code in (201, 202), ok.text
    # a cross-site page cannot even try: Origin is checked first
    evil = anonymous.post(
        "/api/v1/memories",
        json=body,
        headers={"Cookie": cookie, "X-CSRF-Token": csrf, "Origin": "http://evil.example"},
    )
    assert evil.status_code == 403
    # the bearer token keeps working without any cookie or CSRF header
    assert client.post("/api/v1/memories", json=body).status_code in (201, 202)
    # the session does not open the MCP endpoint (bearer only)
    assert (
        anonymous.post(
            "/mcp", json={}, headers={"Cookie": cookie, "X-CSRF-Token": csrf}
        ).status_code
        == 401
    )


def test_logout_ends_the_session(client: TestClient, anonymous: TestClient) -> None:
    cookie, csrf = _login(client, anonymous)
    answer = anonymous.post(
        "/api/v1/dashboard/logout", headers={"Cookie": cookie, "X-CSRF-Token": csrf}
    )
    assert answer.status_code == 200 and answer.json() == {"ended": True}
    assert any("Max-Age=0" in c for c in answer.headers.get_list("set-cookie"))
    assert anonymous.get("/api/v1/stats", headers={"Cookie": cookie}).status_code == 401


def test_websocket_accepts_the_session_cookie(client: TestClient, anonymous: TestClient) -> None:
    cookie, _ = _login(client, anonymous)
    with anonymous.websocket_connect(f"{WS}/ws", headers={"Cookie": cookie}) as ws:
        client.post("/api/v1/memories", json={"content": "Seen over the cookie socket."})
        for _ in range(20):
            event = ws.receive_json()
            if event["type"] == "raw_memory_created":
                break
        assert event["payload"]["content"] == "Seen over the cookie socket."
    from starlette.websockets import WebSocketDisconnect

    with pytest.raises(WebSocketDisconnect), anonymous.websocket_connect(f"{WS}/ws"):
        pass


def test_token_change_ends_sessions(client: TestClient, anonymous: TestClient) -> None:
    cookie, _ = _login(client, anonymous)
    auth: WebAuth = client.app.state.auth  # type: ignore[attr-defined]
    assert auth.set_token("a-brand-new-token-0123") >= 1
    assert anonymous.get("/api/v1/stats", headers={"Cookie": cookie}).status_code == 401
    assert client.get("/api/v1/stats").status_code == 401  # the old bearer token too
    fresh = anonymous.get(
        "/api/v1/stats", headers={"Authorization": "Bearer a-brand-new-token-0123"}
    )
    assert fresh.status_code == 200
    auth.set_token(TOKEN)


# ---- mnemonic open against a real daemon ---------------------------------------------


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaemonProc]:
    with running(tmp_path_factory.mktemp("open") / "home") as proc:
        yield proc


def _env(daemon: DaemonProc) -> dict[str, str]:
    return {
        "MNEMONIC_HOME": str(daemon.home),
        "MNEMONIC_PORT": str(daemon.port),
        "MNEMONIC_TOKEN": PROC_TOKEN,
        "PATH": os.environ.get("PATH", ""),
    }


def test_open_print_and_json(daemon: DaemonProc, run: Callable[..., Any]) -> None:
    code, out, err = run(_env(daemon), "open", "--print")
    assert code == 0, err
    url = out.strip()
    assert url.startswith(f"http://127.0.0.1:{daemon.port}/login?code=")
    with httpx.Client() as http:
        answer = http.get(url)
        assert answer.status_code == 303
        assert answer.cookies.get(SESSION_COOKIE)
        assert http.get(url).status_code == 403  # once only
    code, out, err = run(_env(daemon), "open", "live", "--json")
    assert code == 0, err
    import json

    data = json.loads(out)
    assert data["url"].endswith("#/live") and data["expires_in_s"] == 120 and not data["opened"]
    code, _, err = run(_env(daemon), "open", "nowhere", "--print")
    assert code == 64 and "unknown view" in err


def test_open_without_daemon(tmp_path: Path, run: Callable[..., Any]) -> None:
    from support.daemon_proc import free_port

    env = {
        "MNEMONIC_HOME": str(tmp_path),
        "MNEMONIC_PORT": str(free_port()),
        "MNEMONIC_TOKEN": "t" * 20,
    }
    code, _, err = run(env, "open", "--print")
    assert code == 69 and "not running" in err


# ---- vendored libraries -----------------------------------------------------------------


def test_vendored_files_match_the_manifest() -> None:
    from support.vendor import problems

    assert problems() == []


def test_the_manifest_check_catches_drift(tmp_path: Path) -> None:
    import json

    from support.vendor import problems

    vendor = tmp_path / "vendor"
    (vendor / "lib").mkdir(parents=True)
    (vendor / "lib" / "lib.js").write_text("export {}")
    (vendor / "lib" / "LICENSE").write_text("MIT")
    (vendor / "stray.js").write_text("//")
    manifest = {
        "packages": [
            {
                "name": "lib",
                "version": "1.0.0",
                "source": "https://registry.npmjs.org/lib/-/lib-1.0.0.tgz",
                "files": {"lib/lib.js": "0" * 64, "lib/LICENSE": "0" * 64, "lib/gone.js": "0"},
            },
            {"name": "bad", "version": "1", "source": "https://cdn.example/bad.js", "files": {}},
        ]
    }
    (vendor / "MANIFEST.json").write_text(json.dumps(manifest))
    found = problems(vendor)
    assert "lib: lib/lib.js does not match its sha256" in found
    assert "lib: lib/gone.js is missing" in found
    assert "stray.js is not in MANIFEST.json" in found
    assert "bad: source is not its npm tarball: https://cdn.example/bad.js" in found
    assert "bad: no licence file vendored" in found
