"""The reactor inside a real daemon: an event on the bus starts the configured agent, the
fire shows in ``GET /api/v1/reactor/rules`` and in health; a rule naming an unknown agent
is refused at start (in process and by ``mnemonic serve``, which exits 78 naming it); the
CLI prints the rules."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.cli import cli
from support.daemon_proc import TOKEN, DaemonProc, running

from mnemonic.cli.reactor import rule_lines
from mnemonic.events.types import EpisodeClosed
from mnemonic.exits import EX_CONFIG
from mnemonic.reactor.rules import BUILTIN_RULES, RuleError

QUIET: dict[str, Any] = {
    "episodes": {"interval_s": 3600},
    "enrichment": {"interval_s": 3600},
    "supersession": {"review_interval_s": 3600},
}
RULE = {
    "name": "consolidate-after-episode",
    "on": "episode_closed",
    "when": {"memory_count": {"gte": 1}},
    "do": {"run_agent": "consolidation"},
    "cooldown_s": 3600,
}


def _poll(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition never held")


def _rules(client: TestClient) -> dict[str, Any]:
    response = client.get("/api/v1/reactor/rules")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_an_episode_closed_on_the_bus_starts_the_configured_agent(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(**QUIET, reactor={"rules": [RULE]})
    daemon = client.daemon  # type: ignore[attr-defined]
    before = _rules(client)["rules"][0]
    assert before["fires"] == 0 and before["agent_available"] is True
    assert "reactor" in {s.name for s in daemon.bus.stats()}
    daemon.bus.publish_threadsafe(
        EpisodeClosed(episode_id="e1", project="p", memory_ids=("m",), title="t", memory_count=2)
    )

    def finished() -> dict[str, Any] | None:
        agents = {a["name"]: a for a in client.get("/api/v1/agents").json()["items"]}
        last = agents["consolidation"]["last_run"]
        return last if last and last["finished_at"] else None

    last = _poll(finished)
    assert last["trigger"] == "reactor:consolidate-after-episode"
    assert last["ok"] is True, last["error"]
    rule = _rules(client)["rules"][0]
    assert rule["fires"] == 1
    assert rule["last_fire"]["ok"] is True and rule["last_fire"]["outcome"] == "started"
    assert rule["last_fire"]["event_type"] == "episode_closed"
    assert 3500 < rule["cooldown_remaining_s"] <= 3600
    health = {a["name"]: a for a in client.get("/api/v1/health").json()["agents"]}
    assert health["reactor"]["state"] == "running"
    assert health["reactor"]["detail"]["fires"] == 1
    assert health["reactor"]["detail"]["rules"] == 1


def test_the_builtin_rules_are_listed_by_default(make_client: Callable[..., TestClient]) -> None:
    client = make_client(**QUIET, reactor={"disabled": ["dream-after-episode"]})
    body = _rules(client)
    assert body["enabled"] is True
    rules = {r["name"]: r for r in body["rules"]}
    assert list(rules) == [r["name"] for r in BUILTIN_RULES]
    assert all(r["builtin"] for r in rules.values())
    assert rules["dream-after-episode"]["enabled"] is False
    assert rules["consolidate-on-dead-ratio"]["agent_available"] is True
    assert rules["consolidate-on-dead-ratio"]["when"] == {
        "kind": "dead_ratio",
        "severity": ["warning", "alert"],
    }
    lines = rule_lines(body)
    assert lines[0].split()[:3] == ["RULE", "STATE", "ON"]
    assert any(line.startswith("dream-after-episode") and " off " in line for line in lines)


def test_a_rule_naming_an_unknown_agent_is_refused_at_start(
    make_client: Callable[..., TestClient],
) -> None:
    bad = {**RULE, "name": "typo-rule", "do": {"run_agent": "consolidaton"}}
    with pytest.raises(RuleError, match="reactor rule 'typo-rule': run_agent names unknown agent"):
        make_client(**QUIET, reactor={"rules": [bad]})


def test_the_reactor_can_be_switched_off(make_client: Callable[..., TestClient]) -> None:
    client = make_client(**QUIET, reactor={"enabled": False, "rules": [RULE]})
    daemon = client.daemon  # type: ignore[attr-defined]
    daemon.bus.publish_threadsafe(
        EpisodeClosed(episode_id="e1", project="p", memory_ids=("m",), title="t", memory_count=2)
    )
    time.sleep(0.3)
    body = _rules(client)
    assert body["enabled"] is False
    assert body["rules"][0]["enabled"] is False and body["rules"][0]["fires"] == 0
    assert "reactor" not in {s.name for s in daemon.bus.stats()}
    assert "the reactor is off" in rule_lines(body)[-1]


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({**RULE, "name": "bad-agent", "do": {"run_agent": "nobody"}}, "unknown agent 'nobody'"),
        ({**RULE, "name": "bad-event", "on": "episode_closd"}, "unknown event type"),
    ],
)
def test_serve_with_a_bad_rule_exits_78_naming_it(
    tmp_path: Path, rule: dict[str, Any], message: str
) -> None:
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.yaml").write_text(
        "reactor:\n  rules:\n    - " + json.dumps(rule) + "\n", encoding="utf-8"
    )
    daemon = DaemonProc(home)
    try:
        code = daemon.wait(timeout=60)
        output = daemon.output()
    finally:
        daemon.close()
    assert code == EX_CONFIG, output
    assert f"reactor rule '{rule['name']}'" in output
    assert message in output


def test_the_cli_lists_the_rules_of_a_running_daemon(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env_quiet = {
        "MNEMONIC_EPISODES__INTERVAL_S": "3600",
        "MNEMONIC_ENRICHMENT__INTERVAL_S": "3600",
        "MNEMONIC_SUPERSESSION__REVIEW_INTERVAL_S": "3600",
        "MNEMONIC_REACTOR__RULES": json.dumps([RULE]),
    }
    with running(home, env=env_quiet) as daemon:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("MNEMONIC_")},
            **env_quiet,
            "MNEMONIC_HOME": str(home),
            "MNEMONIC_PORT": str(daemon.port),
            "MNEMONIC_TOKEN": TOKEN,
        }
        as_json = cli(env, "reactor", "--json")
        assert as_json.returncode == 0, as_json.stderr
        body = json.loads(as_json.stdout)
        assert [r["name"] for r in body["rules"]] == ["consolidate-after-episode"]
        table = cli(env, "reactor")
        assert table.returncode == 0, table.stderr
        lines = table.stdout.splitlines()
        assert lines[0].split() == [
            "RULE",
            "STATE",
            "ON",
            "DO",
            "COOLDOWN",
            "FIRES",
            "LAST",
            "FIRE",
            "WAIT",
        ]
        assert lines[1].split() == [
            "consolidate-after-episode",
            "on",
            "episode_closed",
            "run_agent",
            "consolidation",
            "3600s",
            "0",
            "-",
            "-",
        ]
