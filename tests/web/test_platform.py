"""The dashboard shell in a real browser: login, navigation, routing, keyboard, themes,
narrow windows, failing views, CSP, and that nothing leaves the machine."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

NAV_VIEWS = [
    "search",
    "timeline",
    "live",
    "graph",
    "episodes",
    "patterns",
    "insights",
    "health",
    "settings",
]


def test_login_link_sets_strict_httponly_session_and_works_once(
    new_page: Callable[..., Any], web_daemon: Any, console_errors: list[str]
) -> None:
    url = web_daemon.login_url()
    page = new_page(login=False)
    response = page.goto(url)
    assert urlsplit(page.url).path == "/"
    assert response is not None and response.status == 200
    cookies = {c["name"]: c for c in page.context.cookies()}
    session, csrf = cookies["mnemonic_session"], cookies["mnemonic_csrf"]
    assert session["httpOnly"] is True and session["sameSite"] == "Strict"
    assert csrf["httpOnly"] is False and csrf["sameSite"] == "Strict"
    # the page's script sees the CSRF cookie, never the session one
    seen = page.evaluate("document.cookie")
    assert "mnemonic_csrf=" in seen and "mnemonic_session" not in seen
    # the same link a second time: refused, in another browser context too
    other = new_page(login=False)
    again = other.goto(url)
    assert again is not None and again.status == 403
    assert "mnemonic open" in other.content()
    console_errors.clear()  # the 403 of the reused link is logged as a failed load


def test_without_session_the_shell_says_how_to_log_in(
    new_page: Callable[..., Any], web_daemon: Any, console_errors: list[str]
) -> None:
    page = new_page(login=False)
    page.goto(web_daemon.base_url + "/#/search?q=deploy")
    notice = page.wait_for_selector("#notice:not([hidden])")
    assert "mnemonic open" in notice.inner_text()
    page.wait_for_selector(".error-box")
    assert "Not logged in" in page.inner_text("main")
    assert console_errors and all("401" in e for e in console_errors), console_errors
    console_errors.clear()


def test_every_nav_entry_routes_and_mounts(
    page: Any, open_view: Callable[..., Any], web_daemon: Any
) -> None:
    links = page.eval_on_selector_all("#nav-list a", "els => els.map(e => e.dataset.view)")
    assert links == NAV_VIEWS
    for view in NAV_VIEWS:
        page.click(f"#nav-list a[data-view='{view}']")
        section = page.wait_for_selector(f"section.view[data-view='{view}'][data-ready]")
        assert page.get_attribute(f"#nav-list a[data-view='{view}']", "aria-current") == "page"
        assert section.inner_text().strip(), f"{view} rendered nothing"
    # the memory page is reachable by URL, though not in the nav
    open_view("memory", "id=" + web_daemon.ids["deploy"])


def test_view_state_lives_in_the_url(page: Any, open_view: Callable[..., Any]) -> None:
    open_view("search", "q=blue-green&project=atlas&type=decision")
    assert page.input_value("input[name=q]") == "blue-green"
    page.wait_for_selector(".results li.result")
    page.fill("input[name=q]", "rollback")
    page.press("input[name=q]", "Enter")
    page.wait_for_function("location.hash.includes('q=rollback')")
    # reloading the URL restores the same state
    page.reload()
    page.wait_for_selector("section.view[data-view='search'][data-ready]")
    assert page.input_value("input[name=q]") == "rollback"
    assert page.input_value("select[name=type]") == "decision"


def test_keyboard_navigation(page: Any, open_view: Callable[..., Any]) -> None:
    open_view("timeline")
    page.keyboard.press("/")
    page.wait_for_selector("section.view[data-view='search'][data-ready]")
    page.wait_for_function("document.activeElement && document.activeElement.name === 'q'")
    page.keyboard.press("Escape")
    page.keyboard.press("g")
    page.keyboard.press("l")
    page.wait_for_selector("section.view[data-view='live'][data-ready]")
    page.keyboard.press("1")
    page.wait_for_selector("section.view[data-view='search'][data-ready]")
    page.keyboard.press("?")
    page.wait_for_selector("dialog#shortcuts[open]")
    page.keyboard.press("Escape")
    # focus rings are visible: a focused nav link gets an outline
    page.focus("#nav-list a[data-view='graph']")
    outline = page.eval_on_selector(
        "#nav-list a[data-view='graph']", "e => getComputedStyle(e).outlineStyle"
    )
    assert outline != "none"


def _background(page: Any) -> str:
    value: str = page.evaluate("getComputedStyle(document.body).backgroundColor")
    return value


def test_themes_follow_the_system_setting(new_page: Callable[..., Any]) -> None:
    light = new_page(color_scheme="light")
    dark = new_page(color_scheme="dark")
    for page in (light, dark):
        page.wait_for_selector("section.view[data-ready]")
    assert light.evaluate("document.documentElement.dataset.theme") == "light"
    assert dark.evaluate("document.documentElement.dataset.theme") == "dark"
    assert _background(light) != _background(dark)
    # switching the system setting switches the page without a reload
    light.emulate_media(color_scheme="dark")
    light.wait_for_function("document.documentElement.dataset.theme === 'dark'")
    assert _background(light) == _background(dark)


def test_narrow_window_collapses_the_nav(new_page: Callable[..., Any]) -> None:
    page = new_page(viewport={"width": 420, "height": 800})
    page.wait_for_selector("section.view[data-ready]")
    assert not page.is_visible("#nav-list")
    page.click(".nav-toggle")
    assert page.is_visible("#nav-list")
    page.click("#nav-list a[data-view='live']")
    page.wait_for_selector("section.view[data-view='live'][data-ready]")
    assert not page.is_visible("#nav-list")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 420, f"page scrolls sideways at 420 px: {width}"


def test_desktop_layout_fits_1280(page: Any) -> None:
    page.wait_for_selector("section.view[data-ready]")
    assert page.is_visible("#nav-list")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


def test_a_view_that_fails_to_load_shows_an_error_box(
    page: Any, open_view: Callable[..., Any], console_errors: list[str]
) -> None:
    page.route(
        "**/views/graph.js",
        lambda route: route.fulfill(
            status=200, content_type="text/javascript", body="export const x = ;"
        ),
    )
    page.evaluate("location.hash = '#/graph'")
    box = page.wait_for_selector("section.view[data-view='graph'] .error-box")
    assert "failed to load" in box.inner_text()
    # the rest of the app still works
    open_view("search", "q=deploy")
    page.wait_for_selector(".results li.result")
    console_errors.clear()  # Chromium reports the module's syntax error on the console


def test_a_view_not_built_yet_says_so(page: Any, console_errors: list[str]) -> None:
    page.route(
        "**/views/index.json",
        lambda route: route.fulfill(
            status=200, content_type="application/json", body=json.dumps({"views": {}})
        ),
    )
    page.reload()
    box = page.wait_for_selector("section.view .info-box")
    assert "not built yet" in box.inner_text()


def test_csp_blocks_requests_off_the_machine(page: Any, console_errors: list[str]) -> None:
    page.wait_for_selector("section.view[data-ready]")
    outcome = page.evaluate("fetch('http://192.0.2.1/x').then(() => 'sent', () => 'blocked')")
    assert outcome == "blocked"
    assert any("Content Security Policy" in e for e in console_errors), console_errors
    console_errors.clear()
    # an injected inline script does not run either
    page.evaluate(
        "() => { const s = document.createElement('script'); s.textContent = 'window.__inline = 1';"
        " document.body.append(s); }"
    )
    assert page.evaluate("window.__inline") is None
    assert any("Content Security Policy" in e for e in console_errors), console_errors
    console_errors.clear()


def test_static_responses_carry_the_security_headers(web_daemon: Any) -> None:
    with httpx.Client(base_url=web_daemon.base_url) as http:
        for path in ("/", "/app.js", "/style.css", "/lib/dom.js", "/views/search.js"):
            answer = http.get(path)
            assert answer.status_code == 200, path
            csp = answer.headers["content-security-policy"]
            assert "default-src 'self'" in csp and "unsafe-inline" not in csp
            assert "frame-ancestors 'none'" in csp
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert answer.headers["referrer-policy"] == "no-referrer"
