"""Every security rejection of the REST guard, each with no side effect."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from starlette.testclient import TestClient
from support.api import BASE_URL, TOKEN, remember


def _count(client: TestClient) -> int:
    return int(client.get("/api/v1/health").json()["memories"]["raw_memories"])


BODY = {"content": "the deploy key rotates every Monday"}


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example:9999"}, 403),
        ({"Host": "127.0.0.1.nip.io:9999"}, 403),
        ({"Host": "127.0.0.1:8080"}, 421),
        ({"Host": "localhost:1"}, 421),
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "http://127.0.0.1:8080"}, 403),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": f"Basic {TOKEN}"}, 401),
        ({"Authorization": ""}, 401),
        ({"Content-Type": "text/plain"}, 415),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415),
    ],
)
def test_rejections_have_no_side_effect(
    client: TestClient, headers: dict[str, str], status: int
) -> None:
    before = _count(client)
    merged = {"Content-Type": "application/json", **headers}
    response = client.post("/api/v1/memories", content=b'{"content": "x y z"}', headers=merged)
    assert response.status_code == status, response.text
    assert response.json()["status"] == status
    assert "access-control-allow-origin" not in response.headers
    assert _count(client) == before


def test_reads_need_the_token_too(client: TestClient) -> None:
    anonymous = TestClient(client.app, base_url=BASE_URL)
    for path in ("/api/v1/health", "/api/v1/memories/abc", "/api/v1/raw/abc"):
        response = anonymous.get(path)
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"] == "Bearer"


def test_own_origin_and_other_loopback_names_are_allowed(client: TestClient) -> None:
    for host, origin in (
        ("127.0.0.1:9999", "http://127.0.0.1:9999"),
        ("localhost:9999", "http://localhost:9999"),
        ("[::1]:9999", "http://[::1]:9999"),
    ):
        response = client.get("/api/v1/health", headers={"Host": host, "Origin": origin})
        assert response.status_code == 200, (host, response.text)


def test_unauthenticated_probes(client: TestClient) -> None:
    anonymous = TestClient(client.app, base_url=BASE_URL)
    assert anonymous.get("/livez").json() == {"status": "ok"}
    assert anonymous.get("/readyz").json() == {"ready": True}
    assert anonymous.get("/livez", headers={"Host": "evil.example:9999"}).status_code == 403


def test_body_cap_by_length_and_by_stream(make_client: Callable[..., TestClient]) -> None:
    client = make_client(server={"max_body_bytes": 2048})
    before = _count(client)
    big = b'{"content": "' + b"a" * 4096 + b'"}'
    assert (
        client.post(
            "/api/v1/memories", content=big, headers={"Content-Type": "application/json"}
        ).status_code
        == 413
    )

    def chunks() -> object:
        yield big[:1000]
        yield big[1000:]

    response = client.post(
        "/api/v1/memories", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert _count(client) == before


def test_token_file_is_private_and_reused(tmp_path: object) -> None:
    import stat
    from pathlib import Path

    from mnemonic.api_token import configured_token, load_or_create_token
    from mnemonic.paths import resolve_paths

    assert isinstance(tmp_path, Path)
    paths = resolve_paths(tmp_path)
    assert configured_token(paths, None) == ""  # nothing yet: the CLI sends no token
    first = load_or_create_token(paths, None)
    assert stat.S_IMODE(paths.token_file.stat().st_mode) == 0o600
    assert len(first) >= 32
    assert load_or_create_token(paths, None) == first == configured_token(paths, "")
    assert load_or_create_token(paths, " from-env\n") == "from-env"
    # a blank variable or a blank file never means "the empty token", which would let
    # "Authorization: Bearer " through
    assert load_or_create_token(paths, "   ") == first
    paths.token_file.write_text("\n", encoding="utf-8")
    fresh = load_or_create_token(paths, None)
    assert len(fresh) >= 32 and fresh != first
    assert paths.token_file.read_text(encoding="utf-8").strip() == fresh
    assert stat.S_IMODE(paths.token_file.stat().st_mode) == 0o600


def test_rejected_write_really_did_not_store(client: TestClient) -> None:
    remember(client, "baseline memory about sqlite WAL mode")
    hits = client.post("/api/v1/query", json={"query": "quokka"}).json()["results"]
    anonymous = TestClient(client.app, base_url=BASE_URL)
    anonymous.post("/api/v1/memories?wait=true", json={"content": "the quokka smiles"})
    hits = client.post("/api/v1/query", json={"query": "quokka"}).json()["results"]
    assert all("quokka" not in h["memory"]["content"] for h in hits)


def test_the_guard_refuses_an_empty_token() -> None:
    """Defence in depth: with an empty token, "Authorization: Bearer " would match."""
    from starlette.responses import PlainTextResponse

    from mnemonic.api.security import SecurityMiddleware

    for blank in ("", "  "):
        with pytest.raises(ValueError, match="must not be empty"):
            SecurityMiddleware(PlainTextResponse("x"), port=1, token=blank, max_body_bytes=10)
