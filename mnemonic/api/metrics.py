"""``/metrics``: Prometheus text for the HTTP face, recall and the daemon's state.

Each app gets its own ``CollectorRegistry`` (never the process-global one), so tests and
several apps in one process never collide. Three kinds of numbers:

* per request, from ``MetricsMiddleware``: counts and durations labelled by the *route
  template* (``/api/v1/memories/{memory_id}``, never the raw path, so ids cannot explode
  the label set), method and status; anything that matches no route is ``<unmatched>``;
* per recall, from ``Metrics.observe_recall``, which the service calls once per query;
* at scrape time, from a ``MetricsSnapshot`` the composition root supplies (memories by
  state, queue depths, bus drops...), exported by a custom collector so a scrape always
  shows current values and a label that disappears (a closed subscriber) disappears too.

No label ever carries a memory id, content or project name.
"""

from __future__ import annotations

import logging
import platform
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Histogram, Info
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

UNMATCHED = "<unmatched>"
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# 1 ms .. 10 s: the API answers in milliseconds; anything past a second is an incident.
_HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Recall's budget is 50 ms at p95, so the buckets are finer around it.
_RECALL_BUCKETS = (0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5)
_STAGE_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0)
_SERIAL = re.compile(r"^(.*?):\d+$")


@dataclass(frozen=True, slots=True)
class MetricsSnapshot:
    """The daemon's state at scrape time; every mapping is label value -> number."""

    memories_by_state: Mapping[str, int] = field(default_factory=dict)
    raw_by_status: Mapping[str, int] = field(default_factory=dict)
    queue_depths: Mapping[str, int] = field(default_factory=dict)
    drops: Mapping[str, int] = field(default_factory=dict)
    events_published: int = 0
    websocket_clients: int = 0
    vectors: int = 0
    loop_stalls: int = 0
    loop_longest_stall_s: float = 0.0
    database_bytes: int = 0  # the orchestrator's last look (with the WAL)
    self_test_hit_rate: float | None = None  # the last recall self-test; None: none yet
    agent_failures: Mapping[str, int] = field(default_factory=dict)  # failed cycles per agent
    agent_running: Mapping[str, int] = field(default_factory=dict)  # 1 while a cycle runs


SnapshotFn = Callable[[], Awaitable[MetricsSnapshot]]


def fold_serials(values: Iterable[tuple[str, int]]) -> dict[str, int]:
    """Sum series whose names differ only by a serial suffix (``ws:1``, ``ws:2`` -> ``ws``)
    so per-connection subscribers cannot grow the label set without bound."""
    out: dict[str, int] = {}
    for name, value in values:
        match = _SERIAL.match(name)
        key = match.group(1) if match else name
        out[key] = out.get(key, 0) + value
    return out


def method_label(method: str) -> str:
    """Known methods as they are; anything else (a fuzzer's ``FOO``) as ``OTHER``."""
    return method if method in _METHODS else "OTHER"


class _SnapshotCollector(Collector):
    """Exports the last snapshot taken by ``Metrics.render``."""

    def __init__(self) -> None:
        self.latest: MetricsSnapshot | None = None

    def collect(self) -> Iterable[Metric]:
        snap = self.latest
        if snap is None:
            return
        yield _gauge("mnemonic_memories", "Memories by state.", "state", snap.memories_by_state)
        yield _gauge(
            "mnemonic_raw_memories",
            "Raw memories by encoding status.",
            "status",
            snap.raw_by_status,
        )
        yield _gauge("mnemonic_queue_depth", "Items waiting per queue.", "queue", snap.queue_depths)
        drops = CounterMetricFamily(
            "mnemonic_bus_dropped",
            "Events dropped per subscriber (queue full).",
            labels=["subscriber"],
        )
        for name, value in sorted(snap.drops.items()):
            drops.add_metric([name], value)
        yield drops
        yield CounterMetricFamily(
            "mnemonic_bus_published", "Events published on the bus.", value=snap.events_published
        )
        yield GaugeMetricFamily(
            "mnemonic_websocket_clients", "Connected /ws clients.", value=snap.websocket_clients
        )
        yield GaugeMetricFamily("mnemonic_vectors", "Vectors in the index.", value=snap.vectors)
        yield CounterMetricFamily(
            "mnemonic_event_loop_stalls",
            "Event-loop stalls longer than agents.loop_stall_threshold_s.",
            value=snap.loop_stalls,
        )
        yield GaugeMetricFamily(
            "mnemonic_event_loop_longest_stall_seconds",
            "Longest event-loop stall since start.",
            value=snap.loop_longest_stall_s,
        )
        yield GaugeMetricFamily(
            "mnemonic_database_bytes", "Database size with its WAL.", value=snap.database_bytes
        )
        if snap.self_test_hit_rate is not None:
            yield GaugeMetricFamily(
                "mnemonic_recall_self_test_hit_rate",
                "Share of recall self-test probes answered in the top k.",
                value=snap.self_test_hit_rate,
            )
        yield _gauge(
            "mnemonic_agent_cycle_failures",
            "Failed cycles per thinking agent since start.",
            "agent",
            snap.agent_failures,
        )
        yield _gauge(
            "mnemonic_agent_running", "1 while the agent runs a cycle.", "agent", snap.agent_running
        )


def _gauge(name: str, doc: str, label: str, values: Mapping[str, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=[label])
    for key, value in sorted(values.items()):
        family.add_metric([key], value)
    return family


class Metrics:
    """One app's metrics. ``observe_recall`` is handed to the service layer."""

    def __init__(self, snapshot: SnapshotFn | None = None, *, version: str) -> None:
        self.registry = CollectorRegistry()
        self._snapshot = snapshot
        self._collector = _SnapshotCollector()
        self.registry.register(self._collector)
        ProcessCollector(registry=self.registry)
        labels = ["route", "method", "status"]
        self._requests = Counter(
            "mnemonic_http_requests", "HTTP requests answered.", labels, registry=self.registry
        )
        self._durations = Histogram(
            "mnemonic_http_request_duration_seconds",
            "Time from request to the end of the app's answer.",
            labels,
            buckets=_HTTP_BUCKETS,
            registry=self.registry,
        )
        self._recall = Histogram(
            "mnemonic_recall_duration_seconds",
            "Recall pipeline time per query (excluding HTTP).",
            buckets=_RECALL_BUCKETS,
            registry=self.registry,
        )
        self._stages = Histogram(
            "mnemonic_recall_stage_seconds",
            "Recall time per pipeline stage (entry points, ranking, hydration, finishing).",
            ["stage"],
            buckets=_STAGE_BUCKETS,
            registry=self.registry,
        )
        self._snapshot_errors = Counter(
            "mnemonic_metrics_snapshot_errors",
            "Scrapes whose daemon snapshot failed.",
            registry=self.registry,
        )
        self._children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        build = Info("mnemonic_build", "Version of mnemonic and Python.", registry=self.registry)
        build.info({"version": version, "python": platform.python_version()})

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method_label(method), status)
        children = self._children.get(key)
        if children is None:
            # The key space is bounded (templates x known methods x statuses), so the
            # labelled children are cached instead of looked up under a lock each time.
            labels = (key[0], key[1], str(status))
            children = (self._requests.labels(*labels), self._durations.labels(*labels))
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def observe_recall(self, seconds: float) -> None:
        self._recall.observe(seconds)

    def observe_recall_stages(self, stages: Mapping[str, float]) -> None:
        for stage, seconds in stages.items():
            self._stages.labels(stage).observe(seconds)

    async def render(self) -> bytes:
        """Take a fresh snapshot, then the text exposition of the whole registry."""
        if self._snapshot is not None:
            try:
                self._collector.latest = await self._snapshot()
            except Exception:  # a failing snapshot must not hide the request metrics
                log.warning("metrics snapshot failed", exc_info=True)
                self._snapshot_errors.inc()
                self._collector.latest = None
        return generate_latest(self.registry)


def metrics_route(metrics: Metrics) -> Route:
    async def endpoint(request: Request) -> Response:
        body = await metrics.render()
        return Response(body, headers={"content-type": CONTENT_TYPE_PLAIN_0_0_4})

    return Route("/metrics", endpoint, methods=["GET"])


class MetricsMiddleware:
    """Times every HTTP request, including those the security guard rejects.

    Placed outside the guard. Starlette's router records the matched route in
    ``scope["route"]``; for a request that never reached the router (401, 403, 413...) or
    matched nothing, the template is found by the routes' own path patterns (a few
    microseconds; ``Route.matches`` costs several times more).
    """

    def __init__(self, app: ASGIApp, *, metrics: Metrics, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.metrics = metrics
        self.routes = routes
        self._patterns: list[tuple[re.Pattern[str], str]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client gets if the app raises before answering

        async def observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, observed)
        finally:
            elapsed = time.perf_counter() - started
            self.metrics.observe_request(self.template(scope), scope["method"], status, elapsed)

    def template(self, scope: Scope) -> str:
        route = scope.get("route")
        path = getattr(route, "path", None)
        if isinstance(path, str):
            return path
        if self._patterns is None:  # the route list is final once requests arrive
            self._patterns = path_patterns(self.routes)
        return match_template(self._patterns, scope["path"])


def path_patterns(routes: Iterable[BaseRoute]) -> list[tuple[re.Pattern[str], str]]:
    """(compiled pattern, template) of every route, in routing order."""
    out = []
    for route in routes:
        regex, path = getattr(route, "path_regex", None), getattr(route, "path", None)
        if isinstance(regex, re.Pattern) and isinstance(path, str):
            out.append((regex, path))
    return out


def match_template(patterns: Iterable[tuple[re.Pattern[str], str]], path: str) -> str:
    """The template of the first route whose path matches, whatever the method."""
    for regex, template in patterns:
        if regex.match(path):
            return template
    return UNMATCHED
