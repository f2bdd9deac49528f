"""The Health view in a real browser against the shared daemon: every panel draws from
the live routes (agents, queues, filter drops by reason, LLM usage charts drawn by uPlot,
database, cognition, recall index, metacognition, reactor rules), and "Run now" runs an
agent whose new last run then shows in the table and on the server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

AGENT = "episoding"  # quick, always scheduled, harmless to run


def test_every_panel_draws_from_the_daemon(
    page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    open_view("health")
    page.wait_for_selector(".view-health[data-loaded]")
    http = web_daemon.http
    agents = http.get("/api/v1/agents").json()["items"]
    rows = page.locator("#hl-agents tbody tr")
    assert sorted(rows.evaluate_all("rs => rs.map(r => r.dataset.agent)")) == sorted(
        a["name"] for a in agents
    )
    # perception filter: one bar per drop reason (every reason is reported, zeros included)
    reasons = http.get("/api/v1/stats").json()["perception"]["filter"]["dropped"]
    bars = page.locator("#hl-filter .kit-bars li")
    assert sorted(bars.evaluate_all("ls => ls.map(l => l.dataset.key)")) == sorted(reasons)
    # LLM usage: two uPlot charts with a day per point of the window (30 by default)
    assert page.locator("#hl-llm .uplot").count() == 2
    assert page.locator("#hl-llm .uplot canvas").count() == 2
    # database size, counts by state, the recall index state, the reactor's rules
    health = http.get("/api/v1/health").json()
    db_text = page.locator("#hl-db").inner_text()
    assert "Database on disk" in db_text and "By state" in db_text
    assert health["recall_index"]["state"] in page.locator("#hl-recall").inner_text()
    rules = http.get("/api/v1/reactor/rules").json()["rules"]
    assert page.locator("#hl-reactor tbody tr").count() == max(1, len(rules))
    assert page.locator("#hl-cognition").inner_text().strip() != ""
    assert page.locator("#hl-meta table").count() >= 1
    # the window is in the URL
    page.select_option(".hl-days", "7")
    assert page.url.endswith("#/health?days=7")


def test_run_now_shows_the_new_last_run(
    page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    http = web_daemon.http

    def last_run() -> dict[str, Any] | None:
        items = http.get("/api/v1/agents").json()["items"]
        return next(a for a in items if a["name"] == AGENT)["last_run"]

    before = last_run()
    open_view("health")
    page.wait_for_selector(".view-health[data-loaded]")
    row = page.locator(f"#hl-agents tbody tr[data-agent='{AGENT}']")
    row.locator("button.hl-run").click()
    page.locator(".view-health .kit-status").get_by_text(f"{AGENT} ran in").wait_for()

    after = last_run()
    assert after is not None and after["trigger"] == "manual" and after["ok"] is True
    assert before is None or after["id"] > before["id"]
    # the table redraws with that run: triggered by hand, moments ago
    row.locator(".hl-last-run", has_text="manual").wait_for()
    assert (
        "just now" in row.locator(".hl-last-run").inner_text()
        or "second" in row.locator(".hl-last-run").inner_text()
    )
    # a poll that landed between the run's end and its answer may draw the row once more
    # with the button still busy; the redraw after the answer enables it
    row.locator("button.hl-run:not([disabled])").wait_for(timeout=5_000)
    assert row.locator("button.hl-run").is_enabled()
