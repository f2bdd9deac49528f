"""Issue 9 (hardening round 1): values that poisoned reads, fields that skipped redaction,
hostile paths and files at start. Each test reproduces a case the adversarial check found."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.api import remember

from mnemonic.paths import Paths

GH_TOKEN = "ghp_" + "Zq8Lm2Nx4Rt6Vy0Bc3Df5Gh7Jk9Pw1Se2Ua4"


def _db_text(paths: Paths) -> str:
    """Every byte of the database and its WAL, as text (secrets must be in neither)."""
    out = []
    for suffix in ("", "-wal"):
        file = paths.database.with_name(paths.database.name + suffix)
        if file.exists():
            out.append(file.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


def _wait_for_rows(paths: Paths, sql: str, timeout_s: float = 10.0) -> list[Any]:
    """Rows of ``sql`` once there are any (some records are written in the background)."""
    deadline = time.monotonic() + timeout_s
    while True:
        with sqlite3.connect(paths.database) as conn:
            rows = [r[0] for r in conn.execute(sql)]
        conn.close()
        if rows or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


# ---- 2. values that poison reads ------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/memories", '{"content": "x", "metadata": {"n": 1e999}}', "body.metadata.n"),
        (
            "/api/v1/memories",
            '{"content": "x", "metadata": {"a": [1, -1e400]}}',
            "body.metadata.a.1",
        ),
        (
            "/api/v1/memories/batch",
            '{"memories": [{"content": "x", "metadata": {"n": 1E+999}}]}',
            "body.memories.0.metadata.n",
        ),
        ("/api/v1/query", '{"query": "x", "min_salience": 1e999}', "body.min_salience"),
    ],
)
def test_non_finite_numbers_are_refused_with_the_field_named(
    client: TestClient, path: str, body: str, field: str
) -> None:
    response = client.post(path, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert [d["field"] for d in response.json()["details"]] == [field]


def test_nesting_is_bounded_with_a_client_error(client: TestClient) -> None:
    deep = '{"content": "x", "metadata": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001
    response = client.post(
        "/api/v1/memories", content=deep, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert "nested too deeply" in response.json()["error"]

    def nested(levels: int) -> dict[str, Any]:
        value: dict[str, Any] = {"leaf": 1}
        for _ in range(levels - 1):
            value = {"a": value}
        return value

    for levels in (40, 900):
        response = client.post(
            "/api/v1/memories", json={"content": "x", "metadata": nested(levels)}
        )
        assert response.status_code == 422, levels
        assert "nested" in response.text
    assert (
        client.post("/api/v1/memories", json={"content": "x", "metadata": nested(32)}).status_code
        == 202
    )


def test_rows_stored_with_infinity_are_served_and_repaired(
    make_client: Callable[..., TestClient], paths: Paths
) -> None:
    """A row an older build stored as ``{"n": Infinity}`` made every read that included it
    answer 500 (and DELETE answer 500 although it archived)."""
    client = make_client()
    made = remember(client, "the export job runs nightly at two", metadata={"n": 1})
    memory_id, raw_id = made["memory_id"], made["raw_id"]
    with sqlite3.connect(paths.database) as conn:
        conn.execute(
            "UPDATE memories SET metadata = '{\"n\": Infinity}' WHERE id = ?", (memory_id,)
        )
        conn.execute("UPDATE raw_memories SET metadata = '{\"n\": NaN}' WHERE id = ?", (raw_id,))
        # as an older build left it: no record of the repair having run
        conn.execute("DELETE FROM system_meta WHERE key = 'repair.non_finite_metadata'")
    conn.close()

    got = client.get(f"/api/v1/memories/{memory_id}")
    assert got.status_code == 200 and got.json()["metadata"] == {"n": None}
    assert client.get(f"/api/v1/raw/{raw_id}").json()["metadata"] == {"n": None}
    assert client.get("/api/v1/memories").status_code == 200
    assert client.get(f"/api/v1/memories/{memory_id}/context").status_code == 200
    hits = client.post("/api/v1/query", json={"query": "export job nightly"})
    assert hits.status_code == 200 and hits.json()["results"]
    assert client.delete(f"/api/v1/memories/{memory_id}").status_code == 200

    # the next start rewrites the stored text as valid JSON, once
    client.__exit__(None, None, None)
    make_client()
    with sqlite3.connect(paths.database) as conn:
        texts = [
            r[0] for r in conn.execute("SELECT metadata FROM memories WHERE id = ?", (memory_id,))
        ]
        texts += [
            r[0] for r in conn.execute("SELECT metadata FROM raw_memories WHERE id = ?", (raw_id,))
        ]
    conn.close()
    assert texts == ['{"n": null}', '{"n": null}']


# ---- 3. fields that skipped redaction ---------------------------------------------------


def test_query_text_is_redacted_before_it_is_stored_or_published(
    client: TestClient, paths: Paths
) -> None:
    remember(client, "deploy keys live in the vault")
    response = client.post("/api/v1/query", json={"query": f"deploy with {GH_TOKEN} now"})
    assert response.status_code == 200
    activity = client.get("/api/v1/activity", params={"types": "query_executed"}).json()
    assert activity["items"], activity
    assert GH_TOKEN not in str(activity)
    assert "[REDACTED:github_token]" in str(activity)
    stored = _wait_for_rows(paths, "SELECT query FROM retrieval_queries")
    assert stored and all(GH_TOKEN not in q for q in stored)
    assert GH_TOKEN not in _db_text(paths)


@pytest.mark.parametrize(
    ("project", "message"),
    [
        (GH_TOKEN, "secret"),
        ("billing;rm", "must not contain"),
        ("a\nb", "must not contain"),
        ("[REDACTED:x]", "must not contain"),
        ("x" * 201, "at most 200"),
    ],
)
def test_project_names_are_validated_everywhere(
    client: TestClient, project: str, message: str
) -> None:
    for response in (
        client.post("/api/v1/memories", json={"content": "note", "project": project}),
        client.post("/api/v1/query", json={"query": "note", "project": project}),
        client.get("/api/v1/memories", params={"project": project}),
        client.get("/api/v1/activity", params={"project": project}),
    ):
        assert response.status_code == 422, response.text
        assert message in response.text
        assert project not in response.text or len(project) < 20


def test_plain_and_non_ascii_project_names_still_work(client: TestClient) -> None:
    for name in ("billing", "Проект (v2)", "acme/web-app"):
        made = remember(client, f"a note for {name}", project=name)
        memory = client.get(f"/api/v1/memories/{made['memory_id']}").json()
        assert memory["project"] == name


def test_exclusion_and_amend_reasons_are_redacted(client: TestClient, paths: Paths) -> None:
    added = client.post(
        "/api/v1/exclusions", json={"path": "/tmp/mnemonic-x", "reason": f"token {GH_TOKEN}"}
    )
    assert added.status_code in (200, 201), added.text
    made = remember(client, "the cache is redis")
    amended = client.patch(
        f"/api/v1/memories/{made['memory_id']}",
        json={"content": "the cache is memcached", "reason": f"rotated {GH_TOKEN}"},
    )
    assert amended.status_code == 200, amended.text
    listed = client.get("/api/v1/exclusions").text
    assert GH_TOKEN not in listed and "[REDACTED:github_token]" in listed
    events = client.get("/api/v1/activity", params={"types": "memory_amended"}).text
    assert "rotated [REDACTED:github_token]" in events and GH_TOKEN not in events
    assert GH_TOKEN not in _db_text(paths)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/", "stop all perception"),
        ("/../..", "stop all perception"),
        ("~nosuchuser-mnemonic/x", "no such user"),
        (f"/home/me/{GH_TOKEN}", "secret"),
    ],
)
def test_hostile_exclusion_paths_are_refused(client: TestClient, path: str, message: str) -> None:
    response = client.post("/api/v1/exclusions", json={"path": path})
    assert response.status_code == 422, response.text
    assert message in response.text
    assert client.get("/api/v1/exclusions").json()["items"] == []


def test_a_home_relative_exclusion_of_a_known_user_is_kept(client: TestClient) -> None:
    response = client.post("/api/v1/exclusions", json={"path": "~/some-folder"})
    assert response.status_code in (200, 201), response.text
    assert response.json()["path"] == str(Path.home() / "some-folder")


HOSTILE_BODIES = [
    '{"a": ' * 100_000 + "1" + "}" * 100_000,
    "[" * 50_000 + "]" * 50_000,
    '{"content": 1e999, "query": 1e999}',
    '{"content": "x", "query": "x", "metadata": {"n": -1e999}}',
    '{"content": "x", "query": "x", "limit": 1e999, "min_salience": -1e400}',
    "NaN",
    '{"content": "x", "query": "x", "metadata": ' + '{"a": ' * 70 + "1" + "}" * 71,
    '{"memories": [' + '{"content": "x", "metadata": ' * 60 + "1" + "}]" + "}" * 59,
]


def test_every_write_route_refuses_non_finite_and_deep_bodies(client: TestClient) -> None:
    """The cases schemathesis cannot send (JSON has no infinity; its nesting stays
    shallow), against every documented operation that takes a body."""
    made = remember(client, "a memory to address")
    spec = client.get("/openapi.json").json()
    operations = [
        (method, path.replace("{memory_id}", made["memory_id"]))
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict) and "requestBody" in op
    ]
    assert len(operations) >= 5, operations
    for method, path in operations:
        for body in HOSTILE_BODIES:
            response = client.request(
                method.upper(), path, content=body, headers={"Content-Type": "application/json"}
            )
            assert response.status_code in (400, 413, 422), (method, path, body[:60], response.text)


def test_project_aliases_apply_to_writes_and_recall_filters(
    make_client: Callable[..., TestClient],
) -> None:
    """Issue 10 §5: ``--project billing`` finds the memories of the project whose alias
    is billing."""
    client = make_client(
        perception={"projects": [{"name": "acme-billing", "paths": [], "aliases": ["billing"]}]}
    )
    remember(client, "invoices are exported nightly by the export job", project="acme-billing")
    remember(client, "the export job in another project", project="other")
    hits = client.post("/api/v1/query", json={"query": "export job", "project": "billing"})
    assert hits.status_code == 200
    assert [r["memory"]["project"] for r in hits.json()["results"]] == ["acme-billing"]
    made = remember(client, "a note filed under the alias", project="Billing")
    assert client.get(f"/api/v1/memories/{made['memory_id']}").json()["project"] == "acme-billing"


def test_feedback_on_a_query_purged_meanwhile_is_not_found(client: TestClient) -> None:
    """The fuzzer found a 500: a purge removed a query's record between feedback reading it
    and writing the rating (foreign key). The write itself now checks, in its transaction."""
    from mnemonic.store.models import Quality

    store = client.daemon.store
    result = client.portal.call(  # type: ignore[union-attr]
        store.record_feedback, "no-such-query", Quality.HELPFUL, [], 0.1, (0.5, 1.5)
    )
    assert result is None
    made = remember(client, "the deploy runs on fridays")
    answer = client.post("/api/v1/query", json={"query": "deploy fridays"}).json()
    purged = client.delete(f"/api/v1/memories/{made['memory_id']}", params={"purge": "true"})
    assert purged.status_code == 200, purged.text
    rated = client.post(
        "/api/v1/feedback", json={"query_id": answer["query_id"], "quality": "helpful"}
    )
    assert rated.status_code == 404, rated.text


def test_control_characters_around_a_project_name_are_refused(client: TestClient) -> None:
    """The published pattern refuses them anywhere; stripping first let "\\x0bname" in."""
    for project in ("\x0bbilling", "billing\t", "\nbilling"):
        response = client.get("/api/v1/activity", params={"project": project})
        assert response.status_code == 422, project
    assert client.get("/api/v1/activity", params={"project": "  billing "}).status_code == 200
