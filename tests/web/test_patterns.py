"""The Patterns & abstractions view in a real browser against the shared daemon: patterns
found by the abstraction agent (run over REST on seeded memories) are listed, a selected
one shows its evidence (hostile markup in a memory stays text), its URL is shareable, and
dismissing it in the page dismisses it on the server."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

PROJECT = "themes-lab"
HOSTILE = 'Docker compose volume <img src=x onerror="window.__xss=9;alert(9)"> mount broke again.'
THEMES = [
    "Docker compose volume mounts break when the container runs as root.",
    "Rebuilt the docker image after the compose file changed the volume path.",
    "The docker container could not reach the compose network on startup.",
    "Docker compose logs showed the volume was mounted read only.",
    HOSTILE,
    "pytest fixtures in conftest leak temp directories between tests.",
    "The pytest fixture for the database must be function scoped.",
    "A session scoped pytest fixture now loads the model once.",
    "Moved shared pytest fixtures into conftest for reuse.",
]


@pytest.fixture(scope="module")
def patterns(web_daemon: Any) -> dict[str, dict[str, Any]]:
    """The seeded themes remembered over three days, the abstraction agent run once; the
    two patterns by topic ('docker', 'pytest')."""
    http = web_daemon.http
    start = datetime.now(UTC) - timedelta(days=6)
    body = {
        "memories": [
            {
                "content": text,
                "project": PROJECT,
                "timestamp": (start + timedelta(days=i % 3)).isoformat(),
            }
            for i, text in enumerate(THEMES)
        ]
    }
    answer = http.post("/api/v1/memories/batch", params={"wait": "true"}, json=body)
    assert answer.status_code == 201, answer.text
    run = http.post("/api/v1/agents/abstraction/run", params={"wait": "true"})
    assert run.status_code == 200 and run.json()["run"]["ok"], run.text
    items = http.get("/api/v1/patterns", params={"project": PROJECT, "limit": 200}).json()["items"]
    found = {}
    for topic in ("docker", "pytest"):
        match = [p for p in items if topic in p["title"].lower() or topic in p["concepts"]]
        assert match, f"no {topic} pattern in {[p['title'] for p in items]}"
        found[topic] = match[0]
    return found


def test_lists_patterns_and_shows_evidence_as_text(
    patterns: dict[str, dict[str, Any]], page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    docker = patterns["docker"]
    open_view("patterns", f"project={PROJECT}")
    card = page.locator(f".pat-card[data-id='{docker['id']}']")
    card.wait_for()
    assert card.locator(".pat-title").inner_text() == docker["title"]
    assert page.locator(f".pat-card[data-id='{patterns['pytest']['id']}']").count() == 1

    card.locator(".pat-title").click()
    detail = page.locator(".pat-detail")
    detail.locator(".pat-detail-title").wait_for()
    # the selection is in the URL, so it can be shared
    query = parse_qs(urlsplit(page.url).fragment.split("?", 1)[1])
    assert query == {"project": [PROJECT], "id": [docker["id"]]}

    full = web_daemon.http.get(f"/api/v1/abstractions/{docker['id']}").json()
    rows = detail.locator("tbody tr")
    assert rows.count() == len(full["evidence"]) == docker["evidence_count"]
    hostile = [e for e in full["evidence"] if "onerror" in e["summary"]]
    assert hostile, "the hostile memory should be evidence of the docker pattern"
    assert hostile[0]["summary"] in detail.inner_text()  # the markup, shown as text
    assert page.locator(".view-patterns img").count() == 0
    assert page.evaluate("() => window.__xss") is None
    # an evidence row links to its memory's page
    link = detail.locator(f"a[href='#/memory?id={hostile[0]['id']}']")
    assert link.count() == 1

    # opened straight from a shared URL, the same detail shows
    page.reload()
    page.wait_for_selector("section.view[data-view='patterns'][data-ready]")
    page.locator(".pat-detail .pat-detail-title").wait_for()
    assert page.locator(".pat-detail .pat-detail-title").inner_text() == docker["title"]


def test_selecting_moves_focus_and_a_missing_id_says_so(
    patterns: dict[str, dict[str, Any]],
    page: Any,
    open_view: Callable[..., Any],
    console_errors: list[str],
) -> None:
    """The list-detail layout (web/lib/listdetail.js): the count of what is shown, the
    selected card marked, focus on the detail so a keyboard user lands on what they
    opened, and an id that does not exist answered in the pane, not as a broken page."""
    docker, pytest_pattern = patterns["docker"], patterns["pytest"]
    open_view("patterns", f"project={PROJECT}")
    card = page.locator(f".pat-card[data-id='{docker['id']}']")
    card.wait_for()
    cards = page.locator(".pat-card").count()
    assert page.locator(".pat-count").inner_text() == f"{cards} shown"
    page.locator(".pat-detail").get_by_text("Select one to see its evidence.").wait_for()

    card.locator(".pat-title").focus()
    page.keyboard.press("Enter")
    page.locator(".pat-detail .pat-detail-title").wait_for()
    page.wait_for_function("() => document.activeElement.classList.contains('pat-detail')")
    other = page.locator(f".pat-card[data-id='{pytest_pattern['id']}']")
    assert "selected" in (card.get_attribute("class") or "")
    assert "selected" not in (other.get_attribute("class") or "")

    open_view("patterns", "id=no-such-abstraction")
    page.locator(".pat-detail").get_by_text("No such abstraction.").wait_for()
    console_errors[:] = [e for e in console_errors if "no-such-abstraction" not in e]


def test_dismiss_round_trip(
    patterns: dict[str, dict[str, Any]], page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    target = patterns["pytest"]
    open_view("patterns", f"project={PROJECT}&id={target['id']}")
    page.locator(".pat-detail .pat-dismiss").click()
    page.locator(".pat-detail .pat-dismiss-confirm").click()
    page.locator(".pat-detail").get_by_text("Dismissed: it will not be re-created").wait_for()

    server = web_daemon.http.get(f"/api/v1/abstractions/{target['id']}").json()
    assert server["abstraction"]["state"] == "dismissed"
    # the active list (the default filter) no longer shows it; the other one stays
    page.wait_for_function(
        "(id) => !document.querySelector(`.pat-card[data-id='${id}']`)", arg=target["id"]
    )
    assert page.locator(f".pat-card[data-id='{patterns['docker']['id']}']").count() == 1
    # the 'dismissed' filter finds it
    page.select_option("select[name=state]", "dismissed")
    page.locator(f".pat-card[data-id='{target['id']}']").wait_for()
    assert "state=dismissed" in page.url
