"""The Settings view in a real browser: runtime exclusions added and removed in the page
(checked over REST), the watchers listed, and token rotation on a daemon of its own (the
shared one's token comes from MNEMONIC_TOKEN): the old bearer token and other pages' sessions
end, the page that rotated keeps working (it gets a new session), and the CLI's token file
holds the new token."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from support.web_lab import LabDaemon, lab_daemon

HOSTILE_REASON = "<img src=x onerror=alert(7)> reason"


def test_exclusion_round_trip(
    page: Any, open_view: Callable[..., Any], web_daemon: Any, console_errors: list[str]
) -> None:
    path = f"/tmp/web-settings-{uuid.uuid4().hex[:8]}/secret"
    open_view("settings")
    page.fill(".set-add input[name=path]", path)
    page.fill(".set-add input[name=reason]", HOSTILE_REASON)
    page.click(".set-add button[type=submit]")
    row = page.locator(f".set-exclusions tr[data-path='{path}']")
    row.wait_for()
    assert HOSTILE_REASON in row.inner_text()  # text, not markup
    assert page.locator(".view-settings img").count() == 0
    listed = web_daemon.http.get("/api/v1/exclusions").json()["items"]
    assert any(x["path"] == path and x["reason"] == HOSTILE_REASON for x in listed)

    row.locator("button.set-remove").click()
    row.wait_for(state="detached")
    listed = web_daemon.http.get("/api/v1/exclusions").json()["items"]
    assert all(x["path"] != path for x in listed)

    # a relative path is refused with the server's reason, in the page
    page.fill(".set-add input[name=path]", "relative/path")
    page.click(".set-add button[type=submit]")
    page.locator("#set-exclusions .kit-status.kit-bad").wait_for()
    assert "path" in page.locator("#set-exclusions .kit-status").inner_text()
    # the browser logs the refused request as a console error: expected here, only here
    assert any("422" in e for e in console_errors)
    console_errors[:] = [e for e in console_errors if "422" not in e]


def test_watchers_are_listed(page: Any, open_view: Callable[..., Any], web_daemon: Any) -> None:
    open_view("settings")
    rows = page.locator(".set-watchers tbody tr")
    rows.first.wait_for()
    names = rows.evaluate_all("rs => rs.map(r => r.dataset.watcher)")
    expected = [w["name"] for w in web_daemon.http.get("/api/v1/watchers").json()["items"]]
    assert names == expected == ["filesystem", "git", "terminal", "clipboard"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabDaemon]:
    with lab_daemon(tmp_path_factory.mktemp("settings-lab") / "home") as daemon:
        yield daemon


def test_token_rotation_keeps_this_page_and_ends_the_rest(
    lab: LabDaemon,
    new_page: Callable[..., Any],
    console_errors: list[str],
) -> None:
    old = lab.token()
    other = new_page(login=False)
    other.goto(lab.login_url())
    page = new_page(login=False)
    page.goto(lab.login_url())
    page.evaluate("() => { window.location.hash = '#/settings'; }")
    page.wait_for_selector("section.view[data-view='settings'][data-ready]")

    page.click(".set-rotate")
    page.click(".set-rotate-confirm")
    page.locator("#set-token").get_by_text("keeps working").wait_for()
    text = page.locator(".set-token-result").inner_text()
    assert str(lab.token_file) in text
    assert old not in text  # a page never sees the bearer token

    new = lab.token()
    assert new != old
    with lab.http(old) as http:
        assert http.get("/api/v1/stats").status_code == 401
    with lab.http(new) as http:
        assert http.get("/api/v1/stats").status_code == 200

    # this page keeps working, writes included (its new session has a new CSRF token)
    path = f"/tmp/after-rotation-{uuid.uuid4().hex[:8]}"
    page.fill(".set-add input[name=path]", path)
    page.click(".set-add button[type=submit]")
    page.locator(f".set-exclusions tr[data-path='{path}']").wait_for()
    with lab.http(new) as http:
        assert any(x["path"] == path for x in http.get("/api/v1/exclusions").json()["items"])

    # a page opened before the rotation is logged out and says how to come back
    other.reload()
    other.locator("#notice").get_by_text("mnemonic open").wait_for()
    # the browser logs each refused request as a console error: expected here, only here
    refused = [e for e in console_errors if "401" in e]
    assert refused
    console_errors[:] = [e for e in console_errors if "401" not in e]
