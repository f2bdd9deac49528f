"""The Insights view in a real browser: an insight written by the dreamer (run over REST on
memories from three episodes) is listed, and selecting it shows its text and the memories
it came from, hostile markup in a source included, as text.

A daemon of its own (tests/support/web_lab.py): with a dozen memories every term is
"common" under the default ``dreaming.max_df_share``, so that setting is raised here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from support.web_lab import LabDaemon, lab_daemon

NOTES = [
    "Frobnicator cache: quartz-7 volume.",
    "Again the frobnicator cache and the quartz-7 volume.",
    'Moved the frobnicator cache off the quartz-7 volume <img src=x onerror="alert(3)">.',
]
FILLER = [f"Unrelated note {i} about subject{i}." for i in range(6)]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabDaemon]:
    env = {"MNEMONIC_DREAMING__MAX_DF_SHARE": "0.5"}
    with lab_daemon(tmp_path_factory.mktemp("insights-lab") / "home", env) as daemon:
        start = datetime.now(UTC) - timedelta(days=5)
        memories = [
            # a day apart: three episodes of project beta
            {
                "content": text,
                "project": "beta",
                "timestamp": (start + timedelta(days=i)).isoformat(),
            }
            for i, text in enumerate(NOTES)
        ] + [
            {
                "content": text,
                "project": "gamma",
                "timestamp": (start + timedelta(hours=i)).isoformat(),
            }
            for i, text in enumerate(FILLER)
        ]
        with daemon.http() as http:
            answer = http.post(
                "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": memories}
            )
            assert answer.status_code == 201, answer.text
        daemon.run_agent("episoding")
        # closing episodes makes the reactor start the dreamer too; either cycle may write it
        daemon.run_agent("dreaming")
        with daemon.http() as http:
            assert len(http.get("/api/v1/insights").json()["items"]) == 1
        yield daemon


def test_insight_is_listed_and_shows_its_sources(
    lab: LabDaemon, new_page: Callable[..., Any], console_errors: list[str]
) -> None:
    with lab.http() as http:
        insight = http.get("/api/v1/insights").json()["items"][0]
        detail = http.get(f"/api/v1/insights/{insight['id']}").json()
    assert len(detail["sources"]) == 3

    page = new_page(login=False)
    page.goto(lab.login_url())
    page.evaluate("() => { window.location.hash = '#/insights'; }")
    page.wait_for_selector("section.view[data-view='insights'][data-ready]")
    card = page.locator(f".ins-card[data-id='{insight['id']}']")
    card.wait_for()
    for term in insight["terms"]:
        assert term in card.inner_text()
    # the title is a real link (a new tab opens the same selection); a plain click selects
    assert card.locator(".ins-title").get_attribute("href") == f"#/insights?id={insight['id']}"
    card.locator(".ins-title").click()

    aside = page.locator(".ins-detail")
    aside.locator(".ins-content").wait_for()
    assert aside.locator(".ins-content").inner_text() == insight["content"]
    assert aside.locator("tbody tr").count() == 3
    hostile = next(s for s in detail["sources"] if "onerror" in s["summary"])
    assert hostile["summary"] in aside.inner_text()  # markup shown as text
    assert page.locator(".view-insights img").count() == 0
    assert aside.locator(f"a[href='#/memory?id={hostile['id']}']").count() == 1
    assert f"id={insight['id']}" in page.url

    # the project filter narrows the list (and lives in the URL)
    page.fill(".view-insights input[name=project]", "gamma")
    page.press(".view-insights input[name=project]", "Enter")
    page.locator(".ins-empty").wait_for()
    assert "project=gamma" in page.url and f"id={insight['id']}" in page.url

    # an id that does not exist is answered in the pane
    page.evaluate("() => { window.location.hash = '#/insights?id=no-such-insight'; }")
    page.locator(".ins-detail").get_by_text("No such insight.").wait_for()
    console_errors[:] = [e for e in console_errors if "no-such-insight" not in e]
