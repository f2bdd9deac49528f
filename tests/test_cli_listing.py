"""The read-only CLI commands that share ``mnemonic/cli/listing.py`` (patterns, abstractions,
insights, meta, reactor): the pure helpers in a table, then every command against a real
daemon subprocess with real patterns found by the abstraction agent: ``--json`` is the
daemon's answer verbatim, the human form is one line per item, paging prints the next
command, and a missing id is a 404 with a non-zero exit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest
from support.cli import Run
from support.daemon_proc import TOKEN, DaemonProc, running

from mnemonic.cli.listing import dismissed, print_page, query

THEMES = [
    "Docker compose volume mounts break when the container runs as root.",
    "Rebuilt the docker image after the compose file changed the volume path.",
    "The docker container could not reach the compose network on startup.",
    "Docker compose logs showed the volume was mounted read only.",
    "pytest fixtures in conftest leak temp directories between tests.",
    "The pytest fixture for the database must be function scoped.",
    "A session scoped pytest fixture now loads the model once.",
    "Moved shared pytest fixtures into conftest for reuse.",
]
QUIET = {
    "MNEMONIC_EPISODES__INTERVAL_S": "3600",
    "MNEMONIC_ENRICHMENT__INTERVAL_S": "3600",
    "MNEMONIC_SUPERSESSION__REVIEW_INTERVAL_S": "3600",
    "MNEMONIC_ABSTRACTION__INTERVAL_S": "3600",
}


class Colour(StrEnum):
    RED = "red"


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        ({}, {}),
        ({"project": None, "cursor": "", "min_strength": 0.0}, {}),
        ({"limit": 20, "project": "web"}, {"limit": 20, "project": "web"}),
        ({"state": Colour.RED, "level": None}, {"state": "red"}),
        ({"min_strength": 0.5}, {"min_strength": 0.5}),
    ],
)
def test_query_leaves_out_what_was_not_given(given: dict[str, Any], sent: dict[str, Any]) -> None:
    assert query(**given) == sent
    assert all(not isinstance(v, StrEnum) for v in query(**given).values())


def test_a_page_prints_items_to_stdout_and_the_next_command_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    page = {"items": [{"id": "a"}, {"id": "b"}], "next_cursor": "[next]"}
    print_page(page, lambda item: f"item {item['id']}", "things, oldest first", "mnemonic x")
    out, err = capsys.readouterr()
    assert out == "item a\nitem b\n"
    assert "2 things, oldest first" in err
    # the cursor is printed as text, not read as rich markup
    assert "more: mnemonic x --cursor [next]" in err
    print_page({"items": [], "next_cursor": None}, str, "things", "mnemonic x")
    out, err = capsys.readouterr()
    assert out == "" and "0 things" in err and "more:" not in err
    assert dismissed({"id": "p1", "state": "dismissed"}) == ["dismissed p1"]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonProc, Path]]:
    """A daemon whose abstraction agent found two patterns in eight memories."""
    home = tmp_path_factory.mktemp("listing") / "home"
    with running(home, env=QUIET) as daemon, daemon.client() as http:
        start = datetime.now(UTC) - timedelta(days=6)
        days = [(start + timedelta(days=i % 3)).isoformat() for i in range(len(THEMES))]
        memories = [
            {"content": text, "project": "alpha", "timestamp": day}
            for text, day in zip(THEMES, days, strict=True)
        ]
        answer = http.post(
            "/api/v1/memories/batch", params={"wait": "true"}, json={"memories": memories}
        )
        assert answer.status_code == 201, answer.text
        run = http.post("/api/v1/agents/abstraction/run", params={"wait": "true"})
        assert run.status_code == 200 and run.json()["run"]["ok"], run.text
        yield daemon, home


def _env(daemon: DaemonProc, home: Path) -> dict[str, str]:
    return {
        **QUIET,
        "MNEMONIC_HOME": str(home),
        "MNEMONIC_PORT": str(daemon.port),
        "MNEMONIC_TOKEN": TOKEN,
    }


def test_patterns_and_abstractions(seeded: tuple[DaemonProc, Path], run: Run) -> None:
    daemon, home = seeded
    env = _env(daemon, home)
    code, out, err = run(env, "patterns", "--project", "alpha", "--json")
    assert code == 0, err
    page = json.loads(out)
    with daemon.client() as http:
        assert page == http.get("/api/v1/patterns", params={"project": "alpha"}).json()
    ids = [item["id"] for item in page["items"]]
    assert len(ids) == 2

    code, out, err = run(env, "patterns", "--limit", "1", "--state", "active")
    assert code == 0, err
    assert len(out.splitlines()) == 1 and out.split()[-1] in ids
    assert "1 patterns, strongest first" in err
    assert "more: mnemonic patterns --cursor " in err

    code, out, err = run(env, "abstractions", "--level", "pattern")
    assert code == 0, err
    assert sorted(line.split()[-1] for line in out.splitlines()) == sorted(ids)
    assert "2 abstractions, strongest first" in err and "more:" not in err
    code, out, err = run(env, "abstractions", "--level", "axiom")
    assert code == 0 and out == "" and "0 abstractions" in err

    code, out, err = run(env, "abstractions", "show", ids[0])
    assert code == 0, err
    assert f"id: {ids[0]}" in out.splitlines() and "level: pattern" in out
    code, out, _ = run(env, "abstractions", "show", ids[0], "--json")
    assert json.loads(out)["abstraction"]["id"] == ids[0]

    code, out, err = run(env, "patterns", "dismiss", ids[0])
    assert code == 0 and out == f"dismissed {ids[0]}\n", err
    code, out, err = run(env, "abstractions", "dismiss", ids[0], "--json")
    assert code == 0 and json.loads(out) == {"id": ids[0], "state": "dismissed"}, err
    code, out, err = run(env, "patterns", "--state", "dismissed")
    assert code == 0 and out.split()[-1] == ids[0], err

    for args in (("abstractions", "show", "nope"), ("patterns", "dismiss", "nope")):
        code, out, err = run(env, *args)
        assert code != 0 and out == "" and "404" in err, args
    code, _, err = run(env, "patterns", "--state", "bogus")
    assert code == 64, err


def test_insights_meta_and_reactor(seeded: tuple[DaemonProc, Path], run: Run) -> None:
    daemon, home = seeded
    env = _env(daemon, home)
    code, out, err = run(env, "insights", "--json")
    assert code == 0 and json.loads(out) == {"items": [], "next_cursor": None}, err
    code, out, err = run(env, "insights", "--project", "alpha")
    assert code == 0 and out == "" and "0 insights, newest first" in err
    code, out, err = run(env, "insights", "show", "nope")
    assert code != 0 and "404" in err

    code, out, err = run(env, "meta", "--json")
    assert code == 0, err
    latest = json.loads(out)["latest"]
    code, out, err = run(env, "meta")
    assert code == 0, err
    if latest:
        assert out.startswith("latest:\n") and all(kind in out for kind in latest)
    else:
        assert out.startswith("no metacognition observation yet")
    code, _, err = run(env, "meta", "--kind", "nonsense")
    assert code == 64, err

    code, out, err = run(env, "reactor", "--json")
    assert code == 0, err
    rules = json.loads(out)["rules"]
    code, out, err = run(env, "reactor")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["RULE", "STATE"] and len(lines) >= len(rules) + 1
