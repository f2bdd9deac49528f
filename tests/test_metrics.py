"""``/metrics``: Prometheus text from the real app, with the real store behind it."""

from __future__ import annotations

from typing import Any

import prometheus_client
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.testclient import TestClient
from support.api import BASE_URL, TOKEN, query, remember, sibling

from mnemonic import __version__
from mnemonic.api.app import build_app
from mnemonic.api.metrics import (
    UNMATCHED,
    Metrics,
    MetricsSnapshot,
    fold_serials,
    match_template,
    method_label,
    path_patterns,
)


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, keyed by name and sorted labels (parsing proves the
    text is valid Prometheus format)."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _value(text: str, name: str, **labels: str) -> float | None:
    return _samples(text).get((name, tuple(sorted(labels.items()))))


def test_requests_are_counted_by_route_template(client: TestClient) -> None:
    stored = remember(client, "the staging database moved to port 5433")
    memory_id = stored["memory_id"]
    assert client.get(f"/api/v1/memories/{memory_id}").status_code == 200
    assert client.get("/api/v1/memories/no-such-id").status_code == 404
    anonymous = sibling(client, base_url=BASE_URL)
    assert anonymous.get(f"/api/v1/memories/{memory_id}").status_code == 401
    assert client.get("/no/such/path").status_code == 404
    assert client.request("BREW", "/api/v1/query").status_code == 405

    text = anonymous.get("/metrics").text
    template = "/api/v1/memories/{memory_id}"
    for status, count in (("200", 1), ("404", 1), ("401", 1)):
        got = _value(
            text, "mnemonic_http_requests_total", route=template, method="GET", status=status
        )
        assert got == count, status
    assert (
        _value(text, "mnemonic_http_requests_total", route=UNMATCHED, method="GET", status="404")
        == 1
    )
    assert (
        _value(
            text,
            "mnemonic_http_requests_total",
            route="/api/v1/query",
            method="OTHER",
            status="405",
        )
        == 1
    )
    assert (
        _value(
            text,
            "mnemonic_http_request_duration_seconds_count",
            route="/api/v1/memories",
            method="POST",
            status="201",
        )
        == 1
    )
    assert memory_id not in text, "no label may carry a memory id"
    assert "no-such-id" not in text


def test_build_info_and_process_metrics(client: TestClient) -> None:
    from mnemonic import __version__

    text = client.get("/metrics").text
    samples = _samples(text)
    build = [labels for (name, labels) in samples if name == "mnemonic_build_info"]
    assert len(build) == 1
    assert dict(build[0])["version"] == __version__
    assert dict(build[0])["python"].count(".") == 2
    assert any(name == "process_resident_memory_bytes" for name, _ in samples)


def test_metrics_are_open_but_host_checked(client: TestClient) -> None:
    anonymous = sibling(client, base_url=BASE_URL)
    response = anonymous.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert anonymous.get("/metrics", headers={"Host": "evil.example:9999"}).status_code == 403
    cross = anonymous.get("/metrics", headers={"Origin": "http://evil.example"})
    assert cross.status_code == 403


def test_daemon_state_and_recall_durations(client: TestClient) -> None:
    """The composition root's own snapshot (``Daemon.metrics_snapshot``) behind /metrics."""
    remember(client, "deploys happen on Tuesdays after the standup")
    remember(client, "the on-call rota lives in the ops wiki")
    query(client, "when do deploys happen")
    query(client, "where is the rota")
    text = client.get("/metrics").text

    assert _value(text, "mnemonic_memories", state="active") == 2
    assert _value(text, "mnemonic_memories", state="archived") == 0
    assert _value(text, "mnemonic_raw_memories", status="encoded") == 2
    assert _value(text, "mnemonic_raw_memories", status="failed") == 0  # a series, at 0
    assert _value(text, "mnemonic_queue_depth", queue="encoding") == 0
    assert _value(text, "mnemonic_vectors") == 2
    assert _value(text, "mnemonic_bus_published_total") >= 4  # type: ignore[operator]
    assert _value(text, "mnemonic_recall_duration_seconds_count") == 2
    recall_sum = _value(text, "mnemonic_recall_duration_seconds_sum")
    assert recall_sum is not None and 0 < recall_sum < 5
    assert _value(text, "mnemonic_build_info", version=__version__, python=_python()) == 1


def _python() -> str:
    import platform

    return platform.python_version()


def test_snapshot_labels_follow_the_daemon() -> None:
    """A subscriber that goes away takes its series with it (no stale label)."""
    snapshots = iter(
        [
            MetricsSnapshot(drops={"activity": 0, "ws": 3}, queue_depths={"encoding": 5}),
            MetricsSnapshot(drops={"activity": 1}, queue_depths={"encoding": 0}),
        ]
    )

    async def snapshot() -> MetricsSnapshot:
        return next(snapshots)

    app = _bare_app(Metrics(snapshot, version="1"))
    with TestClient(app, base_url=BASE_URL) as client:
        first = client.get("/metrics").text
        second = client.get("/metrics").text
    assert _value(first, "mnemonic_bus_dropped_total", subscriber="ws") == 3
    assert _value(first, "mnemonic_queue_depth", queue="encoding") == 5
    assert _value(second, "mnemonic_bus_dropped_total", subscriber="ws") is None
    assert _value(second, "mnemonic_bus_dropped_total", subscriber="activity") == 1
    assert _value(second, "mnemonic_queue_depth", queue="encoding") == 0


def test_a_failing_snapshot_keeps_the_request_metrics() -> None:
    async def broken() -> MetricsSnapshot:
        raise OSError("disk I/O error")

    app = _bare_app(Metrics(broken, version="1"))
    with TestClient(app, base_url=BASE_URL) as client:
        client.get("/livez")
        response = client.get("/metrics")
    assert response.status_code == 200
    text = response.text
    assert _value(text, "mnemonic_metrics_snapshot_errors_total") == 1
    assert _value(text, "mnemonic_memories", state="active") is None
    assert (
        _value(text, "mnemonic_http_requests_total", route="/livez", method="GET", status="200")
        == 1
    )


def test_an_unhandled_error_is_counted_as_500() -> None:
    async def explode(request: Request) -> Response:
        raise RuntimeError("boom")

    app = _bare_app(Metrics(version="1"), Route("/api/v1/explode", explode))
    with TestClient(
        app,
        base_url=BASE_URL,
        raise_server_exceptions=False,
        headers={"Authorization": f"Bearer {TOKEN}"},
    ) as client:
        assert client.get("/api/v1/explode").status_code == 500
        text = client.get("/metrics").text
    assert (
        _value(
            text,
            "mnemonic_http_requests_total",
            route="/api/v1/explode",
            method="GET",
            status="500",
        )
        == 1
    )


def test_each_app_has_its_own_registry() -> None:
    one, two = Metrics(version="1"), Metrics(version="2")
    one.observe_recall(0.01)
    assert one.registry is not two.registry
    assert one.registry.get_sample_value("mnemonic_recall_duration_seconds_count") == 1
    assert two.registry.get_sample_value("mnemonic_recall_duration_seconds_count") == 0
    global_names = {m.name for m in prometheus_client.REGISTRY.collect()}
    assert not any(name.startswith("mnemonic_") for name in global_names)


def test_recall_observations_fall_in_buckets() -> None:
    metrics = Metrics(version="1")
    for seconds in (0.001, 0.004, 0.04, 3.0):
        metrics.observe_recall(seconds)
    get = metrics.registry.get_sample_value
    assert get("mnemonic_recall_duration_seconds_bucket", {"le": "0.005"}) == 2
    assert get("mnemonic_recall_duration_seconds_bucket", {"le": "0.05"}) == 3
    assert get("mnemonic_recall_duration_seconds_bucket", {"le": "+Inf"}) == 4


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        ([], {}),
        ([("activity", 2)], {"activity": 2}),
        ([("ws:1", 2), ("ws:17", 3), ("encoding", 1)], {"ws": 5, "encoding": 1}),
        ([("bus:ws:4", 1), ("bus:encoding", 0)], {"bus:ws": 1, "bus:encoding": 0}),
        ([("a:b", 1)], {"a:b": 1}),
        ([("v2", 1), ("x:", 1)], {"v2": 1, "x:": 1}),
    ],
)
def test_fold_serials(pairs: list[tuple[str, int]], expected: dict[str, int]) -> None:
    assert fold_serials(pairs) == expected


@pytest.mark.parametrize(
    ("method", "label"),
    [
        ("GET", "GET"),
        ("DELETE", "DELETE"),
        ("OPTIONS", "OPTIONS"),
        ("BREW", "OTHER"),
        ("get", "OTHER"),
        ("", "OTHER"),
    ],
)
def test_method_label(method: str, label: str) -> None:
    assert method_label(method) == label


async def _ok(request: Request) -> Response:
    return Response("")


_ROUTES = [
    Route("/api/v1/memories", _ok, methods=["GET", "POST"]),
    Route("/api/v1/memories/{memory_id}", _ok, methods=["GET"]),
    Route("/api/v1/memories/{memory_id}/context", _ok),
    WebSocketRoute("/ws", _ok),
    Mount("/mcp", app=_ok),
]


@pytest.mark.parametrize(
    ("path", "template"),
    [
        ("/api/v1/memories", "/api/v1/memories"),
        ("/api/v1/memories/0190-abc", "/api/v1/memories/{memory_id}"),
        ("/api/v1/memories/x/context", "/api/v1/memories/{memory_id}/context"),
        ("/api/v1/memories/x/y", UNMATCHED),
        ("/api/v1/memories/", UNMATCHED),
        ("/ws", "/ws"),
        ("/mcp/session", "/mcp"),
        ("/", UNMATCHED),
    ],
)
def test_match_template(path: str, template: str) -> None:
    assert match_template(path_patterns(_ROUTES), path) == template


def _bare_app(metrics: Metrics, *routes: Route) -> Starlette:
    """``build_app`` without a daemon: no store is needed for these routes."""

    async def health() -> dict[str, Any]:
        return {}

    service: Any = None  # the memory routes are never called here
    return build_app(
        service,
        health,
        port=9999,
        token=TOKEN,
        max_body_bytes=1024,
        ready=lambda: True,
        metrics=metrics,
        extra_routes=routes,
    )
