"""The browser test harness: a real daemon, a real Chromium, a logged-in page.

* ``web_daemon`` (session): ``mnemonic serve`` in a subprocess (tests/support/daemon_proc.py)
  seeded with memories in two projects plus hostile ones: ``<img onerror>``, ``</script>``
  and markup in content (and so in summaries and concepts), and entity-encoded markup
  (``&ltimg ...&gt``: no semicolons, which project names refuse like ``<`` and ``>``) and a
  ``javascript:`` URL in a project name.
  ``web_daemon.ids[name]`` maps each seed's name to its memory id.
* ``browser`` (session): Debian's ``/usr/bin/chromium`` driven by Playwright (its own browser
  download cannot work offline). Every test here is skipped, with the reason, when that
  binary or the ``playwright`` package is missing (``apt-get install -y chromium``).
* ``page`` (per test): a fresh context at 1280x800 (``color_scheme`` via the
  ``color_scheme`` fixture, light by default), logged in through a one-time URL, standing on
  the dashboard. Every request is intercepted: anything not addressed to loopback is
  aborted and fails the test, as do console errors, uncaught page errors and dialogs
  (``alert`` from hostile content). ``console_errors`` is that list, for tests that expect
  a specific error and clear it.
* ``page.wait_for_function`` is replaced by a poll that works under the CSP (Playwright's
  own evaluates the predicate with ``eval``, which the page's CSP refuses).
* ``open_view(view, params="")``: go to ``#/<view>?<params>`` and wait until the shell says
  the view mounted (``section.view[data-ready]``).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from support.daemon_proc import DaemonProc

CHROMIUM = Path(os.environ.get("MNEMONIC_CHROMIUM", "/usr/bin/chromium"))
VIEWPORT = {"width": 1280, "height": 800}
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}

# name -> (content, project, type); hostile ones carry markup that must stay text
SEEDS: dict[str, tuple[str, str, str]] = {
    "deploy": (
        "The atlas service deploys with blue-green releases every Friday after the smoke "
        "tests pass.",
        "atlas",
        "decision",
    ),
    "rollback": (
        "Rolling back an atlas deploy means switching the load balancer to the green pool.",
        "atlas",
        "learning",
    ),
    "postgres": (
        "Atlas stores its job queue in Postgres 16; the queue table is partitioned by day.",
        "atlas",
        "general",
    ),
    "beacon-bug": (
        "Beacon's websocket reconnect loop leaked timers until we cleared them on close.",
        "beacon",
        "error",
    ),
    "beacon-css": (
        "The beacon dashboard uses CSS variables for light and dark themes.",
        "beacon",
        "general",
    ),
    "xss-img": (
        'Hostile note <img src=x onerror="window.__xss=1;alert(1)"> about the deploy banner',
        "hostile &ltimg src=x onerror=alert(1)&gt javascript:alert(1) %3Cscript%3E",
        "general",
    ),
    "xss-script": (
        "Closing tags </script><script>window.__xss=2;alert(2)</script> in a deploy log line",
        "hostile &ltimg src=x onerror=alert(1)&gt javascript:alert(1) %3Cscript%3E",
        "general",
    ),
    "xss-markup": (
        '<b onmouseover="window.__xss=3">bold</b> <a href="javascript:window.__xss=4">link</a> '
        "<svg onload=window.__xss=5></svg> deploy markup",
        "atlas",
        "general",
    ),
}
HOSTILE_PROJECT = SEEDS["xss-img"][1]


def _why_skip() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing: install it with `apt-get install -y chromium`"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed: `pip install -e '.[dev]'`"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _why_skip()
    if reason is None:
        return
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.skip(reason=reason))


@dataclass
class WebDaemon:
    proc: DaemonProc
    http: httpx.Client
    ids: dict[str, str] = field(default_factory=dict)
    hostile_project: str = HOSTILE_PROJECT

    @property
    def base_url(self) -> str:
        return self.proc.base_url

    def login_url(self) -> str:
        answer = self.http.post("/api/v1/dashboard/login-links")
        assert answer.status_code == 201, answer.text
        url: str = answer.json()["url"]
        return url

    def remember(
        self, content: str, project: str = "", type_: str = "general", wait: bool = True
    ) -> str:
        body: dict[str, Any] = {"content": content, "type": type_}
        if project:
            body["project"] = project
        answer = self.http.post("/api/v1/memories", params={"wait": str(wait).lower()}, json=body)
        assert answer.status_code in (201, 202), answer.text
        memory_id: str = answer.json()["memory_id"]
        return memory_id


def seed(http: httpx.Client) -> dict[str, str]:
    names = list(SEEDS)
    memories = [
        {"content": content, "project": project, "type": type_}
        for content, project, type_ in (SEEDS[n] for n in names)
    ]
    answer = http.post(
        "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": memories}
    )
    assert answer.status_code == 201, answer.text
    results = answer.json()["results"]
    return {name: r["memory_id"] for name, r in zip(names, results, strict=True)}


@pytest.fixture(scope="session")
def web_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDaemon]:
    home = tmp_path_factory.mktemp("web") / "home"
    proc = DaemonProc(home)
    try:
        proc.wait_ready()
        with proc.client() as http:
            daemon = WebDaemon(proc, http)
            daemon.ids = seed(http)
            yield daemon
    finally:
        proc.close()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def color_scheme() -> str:
    return "light"


@pytest.fixture
def console_errors() -> list[str]:
    """Console errors, page errors, dialogs and off-machine requests of this test's page."""
    return []


def is_loopback(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return True
    return parts.hostname in LOOPBACK


def _guard(context: Any, page: Any, problems: list[str]) -> None:
    def route(route: Any) -> None:
        url = route.request.url
        if is_loopback(url):
            route.continue_()
        else:
            problems.append(f"request left loopback: {url}")
            route.abort()

    context.route("**/*", route)
    page.on(
        "websocket",
        lambda ws: (
            None if is_loopback(ws.url) else problems.append(f"websocket left loopback: {ws.url}")
        ),
    )

    def console(msg: Any) -> None:
        if msg.type == "error":
            where = (msg.location or {}).get("url", "")
            problems.append(f"console error: {msg.text} ({where})")

    page.on("console", console)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))

    def dialog(d: Any) -> None:
        problems.append(f"dialog {d.type}: {d.message}")
        d.dismiss()

    page.on("dialog", dialog)


def _csp_safe_wait(page: Any) -> Callable[..., Any]:
    """``page.wait_for_function`` that works under the dashboard's CSP: Playwright's own
    polls by ``eval`` inside the page, which ``script-src 'self'`` refuses (a page error,
    and a flaky wait). This one polls with ``page.evaluate`` (DevTools protocol, which CSP
    does not govern), the same arguments and the page's default timeout."""

    def wait(
        expression: str, *, arg: Any = None, timeout: float | None = None, polling: Any = None
    ) -> Any:
        limit = (timeout if timeout is not None else 10_000) / 1000
        interval = polling if isinstance(polling, int | float) else 20
        deadline = time.monotonic() + limit
        while True:
            value = page.evaluate(expression, arg)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"wait_for_function timed out after {limit:.1f} s: {expression}")
            page.wait_for_timeout(interval)

    return wait


@pytest.fixture
def new_page(
    browser: Any, web_daemon: WebDaemon, console_errors: list[str], color_scheme: str
) -> Iterator[Callable[..., Any]]:
    """``new_page(login=True, **context_options)``: a guarded page, logged in or not."""
    contexts: list[Any] = []

    def make(login: bool = True, **options: Any) -> Any:
        context = browser.new_context(
            viewport=options.pop("viewport", VIEWPORT),
            color_scheme=options.pop("color_scheme", color_scheme),
            service_workers="block",
            **options,
        )
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.wait_for_function = _csp_safe_wait(page)
        _guard(context, page, console_errors)
        if login:
            page.goto(web_daemon.login_url())
            assert urlsplit(page.url).path == "/", page.url
        return page

    yield make
    for context in contexts:
        context.close()
    assert console_errors == [], "\n".join(console_errors)


@pytest.fixture
def page(new_page: Callable[..., Any]) -> Any:
    return new_page()


@pytest.fixture
def open_view(page: Any) -> Callable[..., Any]:
    def go(view: str, params: str = "", target: Any = None) -> Any:
        p = target or page
        p.evaluate(
            "(h) => { window.location.hash = h; }", f"#/{view}{'?' + params if params else ''}"
        )
        p.wait_for_selector(f"section.view[data-view='{view}'][data-ready]")
        return p

    return go
