"""The episodes view in a real browser against a real daemon: the list matches the server's,
an episode shows its memories, and a memory opens its page; filters live in the URL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from conftest import WebDaemon


def _episodes(web_daemon: WebDaemon, **params: str) -> list[dict[str, Any]]:
    ran = web_daemon.http.post("/api/v1/agents/episoding/run", params={"wait": "true"})
    assert ran.status_code in (200, 409), ran.text
    items: list[dict[str, Any]] = web_daemon.http.get("/api/v1/episodes", params=params).json()[
        "items"
    ]
    return items


def test_episode_list_detail_and_click_through(
    web_daemon: WebDaemon, open_view: Callable[..., Any]
) -> None:
    listed = _episodes(web_daemon)
    assert listed, "the seeded memories form episodes"
    page = open_view("episodes")
    page.wait_for_selector(".ep-card")
    assert page.locator(".ep-card").count() == len(listed)
    assert [
        page.locator(".ep-card").nth(i).get_attribute("data-id") for i in range(len(listed))
    ] == [e["id"] for e in listed]

    page.locator(".ep-card a.ep-open").first.click()
    page.wait_for_selector(".ep-memories li")
    detail = web_daemon.http.get(f"/api/v1/episodes/{listed[0]['id']}").json()
    assert page.locator(".ep-memories li").count() == len(detail["memories"])
    assert parse_qs(urlsplit(page.url).fragment.split("?", 1)[1])["id"] == [listed[0]["id"]]

    link = page.locator(".ep-memories a.mk-memory-link").first
    memory_id = link.get_attribute("data-memory-id")
    link.click()
    page.wait_for_selector("section.view-memory .mem-header")
    assert memory_id == detail["memories"][0]["id"]
    # the memory page names the same episode
    page.wait_for_selector(".mem-episode a.mk-episode-link")
    assert (
        page.locator(".mem-episode a.mk-episode-link").get_attribute("data-episode-id")
        == listed[0]["id"]
    )


def test_episode_filter_by_project_and_hostile_text(
    web_daemon: WebDaemon, open_view: Callable[..., Any]
) -> None:
    beacon = _episodes(web_daemon, project="beacon")
    page = open_view("episodes", "project=beacon")
    page.wait_for_selector(".ep-card")
    assert page.locator(".ep-card").count() == len(beacon)
    # every episode's detail, hostile memories included, renders without running anything
    for item in _episodes(web_daemon):
        page = open_view("episodes", f"id={item['id']}")
        page.wait_for_selector(".ep-title")
    assert page.evaluate("() => window.__xss") is None
    assert page.locator("main img, main script, main svg").count() == 0
