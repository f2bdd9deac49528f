"""``GET /api/v1/watchers`` and ``POST /api/v1/token/rotate`` over a real daemon."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from starlette.testclient import TestClient
from support.api import TOKEN, sibling

from mnemonic.api.settings_routes import TokenRotated, WatcherList, write_token_file
from mnemonic.api_token import TOKEN_ENV, configured_token
from mnemonic.paths import Paths


def _login(client: TestClient) -> TestClient:
    """A second client that holds a dashboard session (cookie + CSRF) and no bearer token."""
    link = client.post("/api/v1/dashboard/login-links")
    assert link.status_code == 201, link.text
    code = parse_qs(urlparse(link.json()["url"]).query)["code"][0]
    browser = sibling(client)
    answer = browser.get("/login", params={"code": code}, follow_redirects=False)
    assert answer.status_code == 303
    assert browser.cookies.get("mnemonic_session")
    return browser


def _csrf(browser: TestClient) -> dict[str, str]:
    return {"X-CSRF-Token": browser.cookies["mnemonic_csrf"]}


# ---- watchers ------------------------------------------------------------------------------


def test_watchers_lists_configured_roots_and_live_state(
    make_client: Callable[..., TestClient], tmp_path: Path
) -> None:
    root = tmp_path / "watched"
    root.mkdir()
    client = make_client(filesystem={"roots": [str(root)]}, clipboard={"enabled": False})
    answer = client.get("/api/v1/watchers")
    assert answer.status_code == 200
    items = {w.name: w for w in WatcherList.model_validate(answer.json()).items}
    assert set(items) == {"filesystem", "git", "terminal", "clipboard"}
    fs = items["filesystem"]
    assert fs.enabled and fs.running and fs.config_key == "filesystem"
    assert [r.path for r in fs.roots] == [str(root)]
    # the tests switch git and the shell history off (tests/conftest.py): listed, not running
    assert not items["git"].enabled and not items["git"].running and items["git"].state == "off"
    assert items["terminal"].config_key == "shell_history" and not items["terminal"].running


# ---- token rotation ------------------------------------------------------------------------


def test_rotation_by_bearer_ends_the_old_token_and_writes_the_new_one(
    make_client: Callable[..., TestClient], paths: Paths, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    client = make_client()
    browser = _login(client)
    assert browser.get("/api/v1/stats").status_code == 200

    answer = client.post("/api/v1/token/rotate")
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    body = TokenRotated.model_validate(answer.json())
    assert body.token and body.token != TOKEN
    assert body.sessions_ended == 1 and body.session_renewed is False
    assert Path(body.token_file) == paths.token_file
    # where the CLI reads it, readable by the owner only
    assert configured_token(paths, None) == body.token
    assert stat.S_IMODE(paths.token_file.stat().st_mode) == 0o600

    assert client.get("/api/v1/stats").status_code == 401  # the old bearer token
    assert browser.get("/api/v1/stats").status_code == 401  # the old session
    fresh = {"Authorization": f"Bearer {body.token}"}
    assert client.get("/api/v1/stats", headers=fresh).status_code == 200


def test_rotation_from_the_dashboard_renews_that_session_only(
    make_client: Callable[..., TestClient], paths: Paths, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    client = make_client()
    page, other = _login(client), _login(client)
    old_session = page.cookies["mnemonic_session"]

    assert page.post("/api/v1/token/rotate").status_code == 403  # no CSRF header
    answer = page.post("/api/v1/token/rotate", headers=_csrf(page))
    assert answer.status_code == 200, answer.text
    body = TokenRotated.model_validate(answer.json())
    assert body.session_renewed is True and body.sessions_ended == 2
    assert body.token is None  # a session never learns the bearer token
    assert page.cookies["mnemonic_session"] != old_session

    assert page.get("/api/v1/stats").status_code == 200  # the page keeps working
    assert page.post(
        "/api/v1/exclusions", json={"path": "/tmp/x"}, headers=_csrf(page)
    ).status_code in (200, 201)  # with its new CSRF token too
    assert other.get("/api/v1/stats").status_code == 401  # every other page must re-open
    assert client.get("/api/v1/stats").status_code == 401  # and the old token is gone
    new = configured_token(paths, None)
    assert new and new != TOKEN
    assert (
        client.get("/api/v1/stats", headers={"Authorization": f"Bearer {new}"}).status_code == 200
    )


def test_rotation_refuses_when_the_token_comes_from_the_environment(
    make_client: Callable[..., TestClient], paths: Paths, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_client()
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    answer = client.post("/api/v1/token/rotate")
    assert answer.status_code == 409
    assert "MNEMONIC_TOKEN" in answer.json()["error"]
    assert client.get("/api/v1/stats").status_code == 200  # nothing changed
    assert not paths.token_file.exists()


def test_write_token_file_replaces_a_loose_file_with_a_private_one(tmp_path: Path) -> None:
    path = tmp_path / "cfg" / "token"
    path.parent.mkdir()
    path.write_text("old\n")
    path.chmod(0o644)
    write_token_file(path, "new-token")
    assert path.read_text() == "new-token\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["token"]  # no temp file left behind


def test_concurrent_rotations_leave_the_file_and_the_guard_agreeing(tmp_path: Path) -> None:
    import asyncio

    from mnemonic.api.settings_routes import TokenRotator

    applied: list[str] = []

    def apply(token: str) -> int:
        applied.append(token)
        return 0

    rotator = TokenRotator(tmp_path / "token", apply, env_token=lambda: None)

    async def both() -> list[tuple[str, int]]:
        return await asyncio.gather(*(rotator.rotate() for _ in range(8)))

    answers = asyncio.run(both())
    assert len({token for token, _ in answers}) == 8
    assert (tmp_path / "token").read_text().strip() == applied[-1]
