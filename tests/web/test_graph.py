"""The graph view in a real browser (sigma.js on WebGL) against a real daemon: it draws the
nodes and edges the server returns, a click on a node opens that memory, hostile labels stay
text, and the vendored layout settles a 2,000-node graph quickly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from conftest import WebDaemon


def _drawn(page: Any) -> tuple[int, int]:
    page.wait_for_function(
        "() => document.querySelector('section.view-graph').dataset.nodes !== undefined"
    )
    data = page.evaluate("() => document.querySelector('section.view-graph').dataset")
    return int(data["nodes"]), int(data["edges"])


def test_graph_of_a_project_draws_every_node_and_a_click_opens_it(
    web_daemon: WebDaemon, open_view: Callable[..., Any]
) -> None:
    server = web_daemon.http.get("/api/v1/graph/neighbourhood", params={"project": "atlas"}).json()
    page = open_view("graph", "project=atlas")
    nodes, edges = _drawn(page)
    assert nodes == len(server["nodes"]) > 0
    assert edges == len(server["edges"])
    assert page.locator(".gr-stage canvas").count() > 0

    target = server["nodes"][0]["id"]
    x, y = page.evaluate(
        """(id) => {
            const view = document.querySelector('.gr-stage').graphView;
            const attrs = view.graph.getNodeAttributes(id);
            const p = view.sigma.graphToViewport({x: attrs.x, y: attrs.y});
            const box = document.querySelector('.gr-stage').getBoundingClientRect();
            return [box.left + p.x, box.top + p.y];
        }""",
        target,
    )
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.wait_for_selector("section.view-memory .mem-header")
    assert parse_qs(urlsplit(page.url).fragment.split("?", 1)[1])["id"] == [target]


def test_graph_around_a_memory_and_hostile_labels(
    web_daemon: WebDaemon, open_view: Callable[..., Any]
) -> None:
    center = web_daemon.ids["xss-img"]
    server = web_daemon.http.get("/api/v1/graph/neighbourhood", params={"memory_id": center}).json()
    page = open_view("graph", f"id={center}")
    nodes, _ = _drawn(page)
    assert nodes == len(server["nodes"])
    # the node list (keyboard way in) renders the hostile summaries as text
    page.click(".gr-nodes summary")
    page.wait_for_selector(".gr-nodes ol li")
    assert "<img" in page.inner_text(".gr-nodes ol")
    page.wait_for_timeout(100)
    assert page.evaluate("() => window.__xss") is None
    assert page.locator("main img, main script").count() == 0

    project = web_daemon.hostile_project
    server = web_daemon.http.get("/api/v1/graph/neighbourhood", params={"project": project}).json()
    hostile = open_view("graph", urlencode({"project": project}))
    assert _drawn(hostile)[0] == len(server["nodes"]) > 0
    assert hostile.input_value(".gr-form input[name=project]") == project
    assert hostile.evaluate("() => window.__xss") is None


def test_graph_rejects_bad_input_with_a_message(
    open_view: Callable[..., Any], console_errors: list[str]
) -> None:
    page = open_view("graph", "limit=5000")
    page.wait_for_selector(".gr-stage .mk-error")
    assert "limit" in page.inner_text(".gr-stage .mk-error")
    console_errors[:] = [e for e in console_errors if "422" not in e]


def test_layout_of_2000_nodes_is_fast(page: Any) -> None:
    """The bounded layout and sigma's first frame for 2,000 nodes and 6,000 edges, in the
    page (the daemon side is covered by tests/test_dashboard_routes.py)."""
    result = page.evaluate(
        """async () => {
            const { Graph, Sigma } = await import('/lib/graph-vendor.js');
            const { layout } = await import('/lib/graph-layout.js');
            const n = 2000, edges = [];
            let s = 7;
            const rnd = () => (s = (s * 16807) % 2147483647) / 2147483647;
            for (let i = 1; i < n; i++) edges.push([Math.floor(rnd() * i), i, rnd()]);
            for (let k = 0; k < 4000; k++) {
                edges.push([Math.floor(rnd() * n), Math.floor(rnd() * n), rnd()]);
            }
            const t0 = performance.now();
            const pos = layout(n, edges, { center: 0, iterations: 80 });
            const layoutMs = performance.now() - t0;
            const g = new Graph({ multi: true, type: 'undirected' });
            for (let i = 0; i < n; i++) {
                g.addNode('n' + i, { x: pos[2 * i], y: pos[2 * i + 1], size: 4, color: '#3b82f6' });
            }
            for (const [a, b] of edges) {
                if (a !== b) g.addEdge('n' + a, 'n' + b, { size: 1, color: '#999999' });
            }
            const box = document.createElement('div');
            box.style.width = '1200px';
            box.style.height = '700px';
            document.body.append(box);
            const r = new Sigma(g, box, { allowInvalidContainer: true });
            const t1 = performance.now();
            r.render();
            const renderMs = performance.now() - t1;
            const finite = Array.from(pos).every(Number.isFinite);
            r.kill();
            box.remove();
            return { layoutMs, renderMs, finite, order: g.order };
        }"""
    )
    assert result["order"] == 2000 and result["finite"]
    assert result["layoutMs"] < 2000, result
    assert result["renderMs"] < 500, result


def _settings(page: Any) -> dict[str, Any]:
    result: dict[str, Any] = page.evaluate(
        """() => {
            const s = document.querySelector('.gr-stage').graphView.sigma;
            return { edges: s.getSetting('hideEdgesOnMove'),
                     labels: s.getSetting('hideLabelsOnMove') };
        }"""
    )
    return result


def test_a_big_graph_hides_edges_and_labels_while_moving(
    web_daemon: WebDaemon, open_view: Callable[..., Any], page: Any
) -> None:
    """Panning 2,000 nodes redraws only the nodes (bench/dashboard.py --only graph: 4 -> 11
    frames/s on software WebGL); a small graph keeps everything drawn while it moves. The
    rule is the view's own ``movingSettings``, imported in the page (the session daemon's
    store is shared by every browser test: 600 more memories would change what others see)."""
    real = web_daemon.http.get("/api/v1/graph/neighbourhood", params={"project": "atlas"}).json()
    small = open_view("graph", "project=atlas")
    assert _drawn(small)[0] == len(real["nodes"]) < 500
    assert _settings(small) == {"edges": False, "labels": False}
    rule = small.evaluate(
        """async () => {
            const view = await import('/views/graph.js');
            return [view.BIG_GRAPH, view.movingSettings(view.BIG_GRAPH),
                    view.movingSettings(view.BIG_GRAPH + 1), view.movingSettings(2000)];
        }"""
    )
    off = {"hideEdgesOnMove": False, "hideLabelsOnMove": False}
    on = {"hideEdgesOnMove": True, "hideLabelsOnMove": True}
    assert rule == [500, off, on, on]
