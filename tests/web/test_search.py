"""The Search view against a real daemon: results with scores and explain bars, filters in
the URL, the search-explain-feedback loop end to end, and hostile memory text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SEARCH = "section.view[data-view='search']"


def _results(page: Any) -> list[dict[str, Any]]:
    page.wait_for_selector(f"{SEARCH}[data-state='done']")
    rows: list[dict[str, Any]] = page.eval_on_selector_all(
        f"{SEARCH} li.result",
        """els => els.map(e => ({
            id: e.dataset.memoryId,
            score: e.querySelector('.result-score').textContent,
            signals: [...e.querySelectorAll('.bar')].map(b => b.dataset.signal),
            widths: [...e.querySelectorAll('.bar-fill')].map(f => f.style.width),
            text: e.querySelector('.result-content').textContent,
        }))""",
    )
    return rows


def test_results_show_score_and_explain_bars(
    page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    open_view("search", "q=how+does+atlas+deploy+on+Friday")
    rows = _results(page)
    assert rows, "no results"
    assert rows[0]["id"] == web_daemon.ids["deploy"]
    top = rows[0]
    assert 0 < float(top["score"]) <= 1
    assert {"direct", "recency", "salience"} <= set(top["signals"])
    assert "100%" in top["widths"]  # the largest contribution fills its track
    status = page.inner_text(f"{SEARCH} .search-status")
    assert "round trip" in status
    # the query's evidence is the best candidate's score
    assert f"evidence {max(float(r['score']) for r in rows):.3f}" in status


def test_filters_narrow_the_results_and_live_in_the_url(
    page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    open_view("search", "q=beacon+websocket+dashboard+themes&project=beacon")
    rows = _results(page)
    assert {web_daemon.ids["beacon-bug"], web_daemon.ids["beacon-css"]} <= {r["id"] for r in rows}
    projects = page.eval_on_selector_all(
        f"{SEARCH} li.result .badge-project", "els => els.map(e => e.textContent)"
    )
    assert set(projects) == {"beacon"}  # other tests may add beacon memories, never others
    # the project select was filled from /projects and shows the URL's value
    page.wait_for_function("document.querySelector(\"select[name=project]\").value === 'beacon'")
    page.select_option("select[name=type]", "error")  # a select applies at once
    page.wait_for_function("location.hash.includes('type=error')")
    rows = _results(page)
    assert [r["id"] for r in rows][:1] == [web_daemon.ids["beacon-bug"]]
    types = page.eval_on_selector_all(
        f"{SEARCH} li.result .badge-type", "els => els.map(e => e.textContent)"
    )
    assert set(types) == {"error"}
    # as_of before every memory existed: nothing
    open_view("search", "q=deploy&as_of=2001-01-01T00:00:00Z")
    page.wait_for_selector(f"{SEARCH}[data-state='done']")
    assert "Nothing matched" in page.inner_text(f"{SEARCH} .results")


def _drawn_path_names_its_source(page: Any, answer: dict[str, Any]) -> str:
    """A result reached by spreading draws its path from ``explain.via``: the last hop
    starts at the memory ``via`` names and links to it, titled by it. Returns that id."""
    spread = [r for r in answer["results"] if r["explain"]["via"]]
    assert spread, "no result was reached by spreading"
    result = spread[0]
    via = result["explain"]["via"]
    card = page.locator(f"{SEARCH} li.result[data-memory-id='{result['memory']['id']}']")
    card.locator("details.explain").evaluate("d => { d.open = true; }")
    last = card.locator(".path ol.path-hops li.hop").last
    assert last.get_attribute("data-from") == via["from"]
    assert last.locator("a.memory-link").first.get_attribute("href") == (
        f"#/memory?id={via['from']}"
    )
    assert via["from_summary"][:40] in last.inner_text()
    assert f"—{via['relation']} {via['strength']:.2f}→" in last.inner_text()
    assert last.inner_text().endswith("this")
    from_id: str = via["from"]
    return from_id


def test_search_explain_feedback_loop(
    page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    target = web_daemon.ids["rollback"]
    before = web_daemon.http.get(f"/api/v1/memories/{target}").json()["utility"]
    with page.expect_response("**/api/v1/query") as response:
        open_view("search", "q=rolling+back+an+atlas+deploy+load+balancer")
    rows = _results(page)
    assert rows[0]["id"] == target
    # explain: the seeds were written together (linked in time), so activation spreads
    assert _drawn_path_names_its_source(page, response.value.json()) in web_daemon.ids.values()
    card = page.locator(f"{SEARCH} li.result[data-memory-id='{target}']")
    card.locator("button.fb-helpful").click()
    page.wait_for_selector(
        f"{SEARCH} li.result[data-memory-id='{target}'] .feedback[data-sent='helpful']"
    )
    assert card.locator("button.fb-helpful").get_attribute("aria-pressed") == "true"
    after = web_daemon.http.get(f"/api/v1/memories/{target}").json()["utility"]
    assert after > before, (before, after)


def test_spread_results_show_the_activation_path(
    page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url))
    with page.expect_response("**/api/v1/query") as response:
        open_view("search", "q=blue-green+releases+Friday+smoke+tests")
    _results(page)
    # the seeds are linked in time (written together), so activation spreads along them
    path = page.wait_for_selector(f"{SEARCH} li.result[data-spread='true'] .path ol.path-hops")
    hops = path.query_selector_all("li.hop")
    assert hops
    origin = hops[0].get_attribute("data-from")
    assert origin in web_daemon.ids.values()
    assert "—" in hops[0].inner_text() and "→" in hops[0].inner_text()
    assert hops[0].query_selector("a.memory-link").get_attribute("href") == f"#/memory?id={origin}"
    _drawn_path_names_its_source(page, response.value.json())
    # drawn from the answer itself: no request per result
    assert not [url for url in asked if "/api/v1/associations" in url], asked


def test_hostile_memory_text_renders_as_text(
    page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    open_view("search", "q=hostile+deploy+banner+closing+tags+markup")
    rows = _results(page)
    texts = " ".join(r["text"] for r in rows)
    assert "<img src=x onerror=" in texts
    assert "</script><script>" in texts
    assert "<svg onload=" in texts
    # nothing became an element, no handler ran, no dialog opened (the fixture checks that)
    main = "section.view[data-view='search']"
    assert (
        page.query_selector(
            f"{main} .results img, {main} .results script, {main} .results svg, {main} .results b"
        )
        is None
    )
    page.hover(f"{main} .result-content")
    assert page.evaluate("window.__xss") is None
    # the hostile project name is a text badge, and links keep their safe href
    badge = page.locator(f"{main} .badge-project", has_text="hostile").first
    assert badge.inner_text() == web_daemon.hostile_project
    assert badge.get_attribute("href").startswith("#/search?")
    hrefs = page.eval_on_selector_all(f"{main} a", "els => els.map(a => a.getAttribute('href'))")
    assert not any(h and h.lower().startswith("javascript:") for h in hrefs)
