"""The timeline in a real browser against a real daemon: the bars add up to what the server
counted, zooming writes the range into the URL, and a click on a memory or an episode opens
it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from conftest import WebDaemon

SUM_BARS = (
    "[...document.querySelectorAll('.tl-bar')].reduce((s, b) => s + Number(b.dataset.total), 0)"
)


def _hash_params(page: Any) -> dict[str, list[str]]:
    fragment = urlsplit(page.url).fragment
    return parse_qs(fragment.split("?", 1)[1]) if "?" in fragment else {}


def _bar_total(page: Any) -> int:
    return int(page.evaluate(f"() => {SUM_BARS}"))


def test_timeline_loads_counts_and_opens_a_memory(
    web_daemon: WebDaemon, open_view: Callable[..., Any]
) -> None:
    page = open_view("timeline")
    page.wait_for_selector(".tl-bar")
    server = web_daemon.http.get(
        "/api/v1/timeline", params={"buckets": 120, "state": "active,fading"}
    ).json()
    assert page.locator(".tl-bar").count() == 120
    assert _bar_total(page) == server["total"] > 0
    assert page.evaluate("() => window.__xss") is None

    first = page.locator(".tl-memories a.mk-memory-link").first
    memory_id = first.get_attribute("data-memory-id")
    first.click()
    page.wait_for_selector("section.view-memory .mem-header")
    assert _hash_params(page)["id"] == [memory_id]


def test_timeline_zoom_and_filters_live_in_the_url(
    web_daemon: WebDaemon, open_view: Callable[..., Any]
) -> None:
    page = open_view("timeline", "project=atlas")
    page.wait_for_selector(".tl-bar")
    atlas = web_daemon.http.get(
        "/api/v1/timeline", params={"project": "atlas", "state": "active,fading"}
    ).json()
    assert _bar_total(page) == atlas["total"]
    busiest = page.locator(".tl-bar:not(.tl-empty)").first
    busiest.click()
    page.wait_for_function("() => location.hash.includes('since=')")
    params = _hash_params(page)
    assert params["project"] == ["atlas"] and "until" in params
    page.wait_for_function("() => document.querySelectorAll('.tl-bar').length === 120")
    page.wait_for_selector(".tl-reset")
    zoomed = web_daemon.http.get(
        "/api/v1/timeline",
        params={
            "project": "atlas",
            "since": params["since"][0],
            "until": params["until"][0],
            "state": "active,fading",
        },
    ).json()
    page.wait_for_function(
        f"(n) => {SUM_BARS} === n",
        arg=zoomed["total"],
    )
    # reload from the shared URL: the same range comes back
    page.reload()
    page.wait_for_selector(".tl-bar")
    assert _hash_params(page)["since"] == params["since"]


def test_timeline_episode_click_through(
    web_daemon: WebDaemon, open_view: Callable[..., Any]
) -> None:
    ran = web_daemon.http.post("/api/v1/agents/episoding/run", params={"wait": "true"})
    assert ran.status_code in (200, 409), ran.text
    page = open_view("timeline")
    page.wait_for_selector(".tl-episode")
    episode = page.locator(".tl-episode").first
    episode_id = episode.get_attribute("data-episode-id")
    episode.click()
    page.wait_for_selector("section.view-episodes .ep-title")
    assert _hash_params(page)["id"] == [episode_id]


def test_episode_lanes_and_positions(page: Any) -> None:
    """The chart's pure helpers, run in the page: greedy lanes and time-to-x fractions."""
    result = page.evaluate(
        """async () => {
            const { assignLanes, fraction } = await import('/lib/timeline-chart.js');
            return {
                lanes: assignLanes([
                    { start: 0, end: 10 }, { start: 5, end: 8 }, { start: 10, end: 12 },
                    { start: 6, end: 7 }, { start: 6, end: 7 }, { start: 6, end: 9 },
                ], 4),
                fractions: [fraction(5, 0, 10), fraction(-5, 0, 10), fraction(50, 0, 10),
                            fraction(3, 3, 3)],
            };
        }"""
    )
    assert result["lanes"] == [0, 1, 0, 2, 3, -1]
    assert result["fractions"] == [0.5, 0, 1, 0]
