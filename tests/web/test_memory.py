"""The memory page in a real browser against a real daemon: what it shows (links with
strength, amendment history, provenance, episode) matches the REST answers, an amend made
in the page lands in the store, actions ask first and show errors, hostile text stays text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conftest import WebDaemon


def _no_xss(page: Any) -> None:
    assert page.evaluate("() => window.__xss") is None
    assert page.locator("main img, main script, main svg, main b").count() == 0


def _open_memory(open_view: Callable[..., Any], memory_id: str) -> Any:
    page = open_view("memory", f"id={memory_id}")
    page.wait_for_selector("section.view-memory .mem-header")
    return page


def test_memory_page_shows_links_provenance_and_amend_round_trip(
    web_daemon: WebDaemon, open_view: Callable[..., Any]
) -> None:
    first = web_daemon.remember(
        "Kestrel cache evicts with LRU and holds 512 entries per shard.", "kestrel", "decision"
    )
    second = web_daemon.remember(
        "The kestrel cache keeps 512 entries per shard, evicting least recently used.",
        "kestrel",
        "learning",
    )
    context = web_daemon.http.get(f"/api/v1/memories/{first}/context").json()
    page = _open_memory(open_view, first)
    assert "Kestrel cache evicts with LRU" in page.inner_text("pre.mem-text")
    rows = page.locator(".mem-links tbody tr")
    assert rows.count() == len(context["associations"])
    assert context["associations"], "the encoder should link two near-identical notes"
    linked = {a["memory"]["id"] for a in context["associations"]}
    assert second in linked
    shown = {
        page.locator(".mem-links tbody tr a.mk-memory-link").nth(i).get_attribute("data-memory-id")
        for i in range(rows.count())
    }
    assert shown == linked
    relation = context["associations"][0]["relation"]
    assert relation in page.inner_text(".mem-links")
    assert "Raw observation" in page.inner_text(".mem-provenance")
    assert "none: written through api" in page.inner_text(".mem-provenance")
    assert page.inner_text(".mem-amendment-history").strip().endswith("Never amended.")

    # amend through the page, then check the store over REST
    page.click("button.mem-amend")
    page.fill(
        ".mem-amend-form textarea",
        "Kestrel cache evicts with LRU and holds 1024 entries per shard.",
    )
    page.fill(".mem-amend-form input[name=reason]", "doubled in March")
    page.click(".mem-amend-save > button")
    page.click(".mem-amend-save .mk-confirm-ask button:has-text('Confirm')")
    page.wait_for_selector(".mk-status-ok:has-text('Amended.')")
    stored = web_daemon.http.get(f"/api/v1/memories/{first}").json()
    assert stored["content"] == "Kestrel cache evicts with LRU and holds 1024 entries per shard."
    page.wait_for_selector(".mem-amendments li")
    history = page.inner_text(".mem-amendments")
    assert "512 entries" in history and "1024 entries" in history and "doubled in March" in history
    assert "1024 entries" in page.inner_text("pre.mem-text")


def test_actions_confirm_show_errors_and_forget(
    web_daemon: WebDaemon, open_view: Callable[..., Any], console_errors: list[str]
) -> None:
    victim = web_daemon.remember("Temporary note about the osprey build cache location.", "osprey")
    page = _open_memory(open_view, victim)

    # supersede an id that names nothing: a clear error, nothing changes
    page.fill(".mem-supersede-form input[name=older_id]", "no-such-memory")
    page.click(".mem-supersede-form .mk-confirm > button")
    page.click(".mem-supersede-form .mk-confirm-ask button:has-text('Confirm')")
    page.wait_for_selector(".mk-status-error")
    assert "no memory 'no-such-memory'" in page.inner_text(".mk-status-error")
    console_errors[:] = [e for e in console_errors if "422" not in e]  # the refused request
    chain = web_daemon.http.get(f"/api/v1/memories/{victim}/supersessions").json()
    assert chain["supersedes"] == []

    # forget asks first; Cancel does nothing
    forget = page.locator(".mem-actions .mk-confirm > button:has-text('Forget')")
    forget.click()
    page.click(".mem-actions .mk-confirm-ask button:has-text('Cancel')")
    assert web_daemon.http.get(f"/api/v1/memories/{victim}").json()["state"] == "active"
    forget.click()
    page.click(".mem-actions .mk-confirm-ask button:has-text('Confirm')")
    page.wait_for_selector(".mk-status-ok:has-text('Forgotten')")
    assert web_daemon.http.get(f"/api/v1/memories/{victim}").json()["state"] == "archived"
    page.wait_for_selector(".mem-actions button:has-text('Restore')")


def test_mark_as_superseding_round_trip(
    web_daemon: WebDaemon, open_view: Callable[..., Any]
) -> None:
    old = web_daemon.remember("The heron API listens on port 8080.", "heron")
    new = web_daemon.remember("The heron API moved to port 9090 in May.", "heron")
    page = _open_memory(open_view, new)
    page.fill(".mem-supersede-form input[name=older_id]", old)
    page.click(".mem-supersede-form .mk-confirm > button")
    page.click(".mem-supersede-form .mk-confirm-ask button:has-text('Confirm')")
    page.wait_for_selector(".mk-status-ok:has-text('Marked as superseding')")
    chain = web_daemon.http.get(f"/api/v1/memories/{new}/supersessions").json()
    assert [e["older_id"] for e in chain["supersedes"]] == [old]
    page.wait_for_selector(f".mem-chain a[href='#/memory?id={old}']")


def test_hostile_memory_renders_as_text(
    web_daemon: WebDaemon, open_view: Callable[..., Any]
) -> None:
    for name in ("xss-img", "xss-script", "xss-markup"):
        page = _open_memory(open_view, web_daemon.ids[name])
        content = page.inner_text("pre.mem-text")
        assert (
            content
            == web_daemon.http.get(f"/api/v1/memories/{web_daemon.ids[name]}").json()["content"]
        )
        page.wait_for_timeout(100)
        _no_xss(page)
    page = _open_memory(open_view, web_daemon.ids["xss-img"])
    assert web_daemon.hostile_project in page.inner_text(".mem-meta")  # entity text shown as typed


def test_unknown_memory_shows_an_error(
    open_view: Callable[..., Any], console_errors: list[str]
) -> None:
    page = open_view("memory", "id=does-not-exist")
    page.wait_for_selector(".mk-error")
    assert "404" in page.inner_text(".mk-error")
    console_errors[:] = [e for e in console_errors if "404" not in e]  # the failed fetch itself
