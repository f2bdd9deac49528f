"""The thinking half end to end, through a real daemon: the cycle agents run on demand over
REST (one cycle at a time), the LLM layer with the scripted OpenAI-compatible server over a
real socket (and without it: every task falls back to its heuristic), episodes, merging and
unmerging, decay with the archived fallback of recall, and the CLI against a daemon
subprocess. Unit tests of each piece live in their own files; these check the wiring."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.testclient import TestClient
from support.cli import Run, cli
from support.daemon_proc import TOKEN, DaemonProc, running
from support.openai_server import (
    OpenAIServer,
    Reply,
    Request,
    chat_reply,
    error_reply,
    llm_settings,
)

from tests.support.api import query, remember

CHAT = "/v1/chat/completions"
AGENTS = [
    "abstraction",
    "consolidation",
    "dreaming",
    "enrichment",
    "episoding",
    "metacognition",
    "supersession",
]
# scheduled cycles stay out of the way of the ones a test runs by hand (a scheduled cycle
# running when the test asks would answer 409); consolidation's default is 6 h anyway
# (the reactor is off too: its built-in rules would start metacognition after a
# consolidation this test runs by hand, and the runs it counts would be off by one)
QUIET: dict[str, Any] = {
    "episodes": {"interval_s": 3600},
    "enrichment": {"interval_s": 3600},
    "supersession": {"review_interval_s": 3600},
    "reactor": {"enabled": False},
    "orchestrator": {"enabled": False},
}
QUIET_ENV = {
    "MNEMONIC_EPISODES__INTERVAL_S": "3600",
    "MNEMONIC_ENRICHMENT__INTERVAL_S": "3600",
    "MNEMONIC_SUPERSESSION__REVIEW_INTERVAL_S": "3600",
    "MNEMONIC_REACTOR__ENABLED": "false",
    "MNEMONIC_ORCHESTRATOR__ENABLED": "false",
}

# a near-duplicate pair the encoder keeps apart (cosine 0.944 < near_duplicate_threshold
# 0.95) and consolidation merges (>= merge_similarity 0.93, one restates the other)
TWIN_A = "The frobnicator cache lives in the quartz-7 volume."
TWIN_B = "The frobnicator cache lives in the quartz-7 volume on the build host."
LOOKALIKES = [  # near-identical by vector, different facts: never merged
    "Deploy the web app to staging every Friday.",
    "Deploy the web app to production every Friday.",
]
OTHERS = [
    "The nightly backup job copies the database to the S3 bucket.",
    "Decided to keep sessions in Redis because MySQL was too slow.",
]

# the scripted LLM's encodings: faithful to their notes (every name and number occurs)
ENCODINGS: dict[str, dict[str, Any]] = {
    "Deploys of the payments service go through the Argo pipeline on Fridays.": {
        "gist": "Payments deploys via Argo on Fridays",
        "summary": "Friday deploys of the payments service run through the Argo pipeline.",
        "concepts": ["payments service", "argo pipeline", "friday deploys"],
        "entities": ["Argo"],
        "type": "decision",
        "significance": 0.8,
        "salience": 0.9,
    },
    "The flaky checkout test was caused by a shared temp directory between workers.": {
        "gist": "Flaky checkout test root cause",
        "summary": "A temp directory shared between workers made the checkout test flaky.",
        "concepts": ["flaky test", "temp directory", "test workers"],
        "entities": [],
        "type": "insight",
        "significance": 0.7,
        "salience": 0.8,
    },
}
ENCODINGS_FIRST = next(iter(ENCODINGS))
_NOTE = re.compile(r"<<<\n(.*)\n>>>", re.S)


def _note_of(request: Request) -> str:
    messages = request.json()["messages"]
    found = _NOTE.search(messages[-1]["content"])
    return found.group(1) if found else ""


def _encoder(request: Request) -> Reply:
    """The scripted LLM: the table's encoding of the note it is asked about."""
    answer = ENCODINGS.get(_note_of(request))
    if answer is None:
        return error_reply(500, "no scripted answer for this note")
    return chat_reply(json.dumps(answer), prompt_tokens=120, completion_tokens=40)


def _ids(answer: dict[str, Any]) -> list[str]:
    return [r["memory"]["id"] for r in answer["results"]]


def _run_agent(client: TestClient, name: str) -> dict[str, Any]:
    response = client.post(f"/api/v1/agents/{name}/run", params={"wait": "true"})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["agent"] == name and body["state"] == "finished"
    assert body["run"]["ok"] is True, body["run"]["error"]
    assert body["run"]["trigger"] == "manual"
    summary: dict[str, Any] = body["run"]["summary"]
    return summary


def _agents(client: TestClient) -> dict[str, dict[str, Any]]:
    response = client.get("/api/v1/agents")
    assert response.status_code == 200, response.text
    return {a["name"]: a for a in response.json()["items"]}


def _memory(client: TestClient, memory_id: str) -> dict[str, Any]:
    response = client.get(f"/api/v1/memories/{memory_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _wait_for(check: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _encoded(client: TestClient) -> None:
    """Wait until every accepted raw memory (a gist included) has its vector."""

    def settled() -> bool:
        raw = client.get("/api/v1/stats").json()["raw"]["by_status"]
        return not raw.get("accepted")

    _wait_for(settled, "the encoder to settle")


def _by_state(client: TestClient) -> dict[str, int]:
    by_state: dict[str, int] = client.get("/api/v1/stats").json()["memories"]["by_state"]
    return by_state


# ---- 1. without an LLM ---------------------------------------------------------------------


def test_without_an_llm_every_task_is_heuristic_and_every_agent_runs(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(**QUIET)
    llm = client.get("/api/v1/health").json()["llm"]
    assert llm["configured"] is False and llm["mode"] == "heuristic"
    assert set(llm["tasks"]) >= {"enrichment", "episode descriptions"}
    assert set(llm["tasks"].values()) == {"heuristic"}, llm["tasks"]

    for text in (TWIN_A, LOOKALIKES[0], OTHERS[0]):
        remember(client, text, project="ops")

    listed = _agents(client)
    assert sorted(listed) == AGENTS
    assert listed["episoding"]["schedule"] == {"interval_s": 3600.0, "cron": None}
    assert listed["consolidation"]["schedule"]["interval_s"] == 6 * 3600.0
    assert listed["supersession"]["schedule"]["interval_s"] == 3600.0
    for name in AGENTS:
        assert listed[name]["running"] is False and listed[name]["last_run"] is None
        assert listed[name]["next_run_at"] is not None, name  # scheduled, not on demand only
    assert listed["enrichment"]["detail"]["mode"] == "heuristic"

    summaries = {name: _run_agent(client, name) for name in AGENTS}
    assert summaries["enrichment"]["mode"] == "heuristic"
    assert summaries["enrichment"]["enriched"] == 0
    assert summaries["supersession"] == {"mode": "heuristic", "pending": 0, "judged": 0}
    assert summaries["episoding"]["assigned"] == 3  # every memory found its episode
    assert summaries["consolidation"]["merged"] == 0
    assert summaries["consolidation"]["budget_exhausted"] is False

    after = _agents(client)
    for name in AGENTS:
        last = after[name]["last_run"]
        assert after[name]["runs"] == 1 and after[name]["failures"] == 0
        assert last["ok"] is True and last["summary"] == summaries[name]
        assert last["finished_at"] >= last["started_at"]

    assert client.post("/api/v1/agents/no-such-agent/run").status_code == 404
    assert (
        client.post("/api/v1/agents/episoding/run", params={"wait": "perhaps"}).status_code == 422
    )

    off = make_client(
        enrichment={"enabled": False}, **{k: v for k, v in QUIET.items() if k != "enrichment"}
    )
    tasks = off.get("/api/v1/health").json()["llm"]["tasks"]
    assert tasks["enrichment"] == "off"
    assert {v for k, v in tasks.items() if k != "enrichment"} == {"heuristic"}


def test_a_second_run_while_one_is_under_way_is_409(
    make_client: Callable[..., TestClient],
) -> None:
    """A scripted LLM that answers slowly keeps an enrichment cycle under way."""
    with OpenAIServer() as server:
        slow = dataclasses.replace(chat_reply(json.dumps(ENCODINGS[ENCODINGS_FIRST])), delay=1.5)
        server.set_handler(CHAT, lambda _request: slow)
        client = make_client(llm=llm_settings(server), **QUIET)
        remember(client, ENCODINGS_FIRST, project="shop")

        started = client.post("/api/v1/agents/enrichment/run", params={"wait": "false"})
        assert started.status_code == 202, started.text
        assert started.json()["state"] == "started"
        again = client.post("/api/v1/agents/enrichment/run", params={"wait": "true"})
        assert again.status_code == 409, again.text
        assert "already running" in again.json()["error"]
        busy = _agents(client)["enrichment"]
        assert busy["running"] is True and busy["current_run"]["trigger"] == "manual"
        # other agents are not blocked by it
        assert _run_agent(client, "consolidation")["merged"] == 0

        done = _wait_for(
            lambda: (a := _agents(client)["enrichment"])["last_run"] and not a["running"] and a,
            "the enrichment cycle to end",
        )
    assert done["last_run"]["ok"] is True
    assert done["last_run"]["summary"]["enriched"] == 1
    assert done["runs"] == 1  # the refused run was never started
    assert len(server.requests_to(CHAT)) == 1


# ---- 2. with the scripted LLM ---------------------------------------------------------------


def test_enrichment_with_the_scripted_llm_and_the_fallback_when_it_goes_down(
    make_client: Callable[..., TestClient],
) -> None:
    server = OpenAIServer(model_name="scripted-7b")
    with server:
        server.set_handler(CHAT, _encoder)
        llm = llm_settings(server, breaker_failures=2, breaker_cooldown_s=600)
        client = make_client(llm=llm, **QUIET)
        health = client.get("/api/v1/health").json()["llm"]
        assert health["configured"] is True and health["mode"] == "llm"
        assert health["model"] == "scripted-7b"
        assert set(health["tasks"].values()) == {"llm"}, health["tasks"]

        notes = list(ENCODINGS)
        ids = [remember(client, note, project="shop")["memory_id"] for note in notes]
        before = {i: _memory(client, i) for i in ids}
        for i in ids:
            assert before[i]["metadata"].get("encoded_by") != "llm"

        summary = _run_agent(client, "enrichment")
        assert summary["mode"] == "llm"
        assert summary["enriched"] == 2, summary
        for note, memory_id in zip(notes, ids, strict=True):
            after = _memory(client, memory_id)
            wanted = ENCODINGS[note]
            assert after["summary"] == wanted["summary"] != before[memory_id]["summary"]
            assert after["concepts"] == wanted["concepts"] != before[memory_id]["concepts"]
            assert after["type"] == wanted["type"]
            assert after["content"] == note  # the observation itself never changes
            assert after["metadata"]["encoded_by"] == "llm"
            assert after["metadata"]["encoding_model"] == "scripted-7b"
        # the LLM's concepts are searchable at once
        assert ids[1] in _ids(query(client, "temp directory shared between workers", limit=3))

        usage = client.get("/api/v1/llm/usage").json()
        assert usage["totals"]["calls"] == 2 and usage["totals"]["failures"] == 0
        assert usage["totals"]["prompt_tokens"] == 240
        assert [(g["key"], g["calls"]) for g in usage["by_operation"]] == [("encode", 2)]
        assert [g["key"] for g in usage["by_model"]] == ["scripted-7b"]
        assert len(server.requests_to(CHAT)) == 2
        assert _run_agent(client, "enrichment")["enriched"] == 0  # nothing new: no call
        assert len(server.requests_to(CHAT)) == 2

    # the endpoint is gone: calls fail, the breaker opens, every task falls back
    late = [
        remember(client, f"Outage note {n}: the ledger export ran for {n} minutes.", project="shop")
        for n in (11, 12, 13)
    ]
    failing = _run_agent(client, "enrichment")  # a cycle with failing calls is still ok
    assert failing["enriched"] == 0
    status = client.get("/api/v1/llm/status").json()
    assert status["breaker"]["state"] == "open", status
    assert status["breaker"]["times_opened"] == 1
    assert status["failures"] >= 2 and status["last_error"]
    assert status["mode"] == "heuristic"
    health = client.get("/api/v1/health").json()["llm"]
    assert health["configured"] is True and health["mode"] == "heuristic"
    assert set(health["tasks"].values()) == {"heuristic"}, health["tasks"]

    fallback = _run_agent(client, "enrichment")
    assert fallback["mode"] == "heuristic" and fallback["enriched"] == 0
    for name in ("episoding", "consolidation", "supersession"):
        _run_agent(client, name)  # each cycle still completes, heuristically
    assert _agents(client)["enrichment"]["detail"]["mode"] == "heuristic"
    for item in late:
        assert _memory(client, item["memory_id"])["metadata"].get("encoded_by") != "llm"
    usage = client.get("/api/v1/llm/usage").json()["totals"]
    assert usage["calls"] == 4 and usage["failures"] == 2  # refused calls cost nothing


def _every_task(request: Request) -> Reply:
    """The scripted LLM for every task of the thinking half, told apart by its prompt."""
    system = request.json()["messages"][0]["content"]
    if system.startswith("You describe one episode"):
        answer: dict[str, Any] = {
            "title": "Login refactor",
            "summary": "The login refactor broke the remember-me cookie, then it was fixed.",
            "concepts": ["login refactor", "remember-me cookie"],
        }
    elif system.startswith("You merge near-duplicate notes"):
        answer = {"summary": "Frobnicator cache: quartz-7 volume, on the build host."}
    elif "supersede" in request.json()["messages"][-1]["content"]:
        answer = {"supersedes": True, "subject": "docs site maintainer", "reason": "Lee took over"}
    else:
        return _encoder(request)
    return chat_reply(json.dumps(answer), prompt_tokens=50, completion_tokens=10)


def test_with_the_scripted_llm_episodes_gists_and_supersessions_use_it(
    make_client: Callable[..., TestClient],
) -> None:
    with OpenAIServer() as server:
        server.set_handler(CHAT, _every_task)
        client = make_client(llm=llm_settings(server), **QUIET)
        start = (datetime.now(UTC) - timedelta(days=1)).replace(microsecond=0)
        login = [
            "Started the login refactor in auth/session.py.",
            "The login refactor broke the remember-me cookie.",
            "Fixed the remember-me cookie by renewing it on refresh.",
        ]
        for n, text in enumerate(login):
            when = (start + timedelta(minutes=n)).isoformat()
            remember(client, text, project="auth", timestamp=when)
        a = remember(client, TWIN_A, project="ops")["memory_id"]
        remember(client, TWIN_B, project="ops")
        older = remember(
            client,
            "Dana is the maintainer of the docs site.",
            project="docs",
            timestamp=(start - timedelta(days=30)).isoformat(),
        )["memory_id"]
        newer = remember(
            client,
            "Dana handed the docs site over; Lee is the new maintainer.",
            project="docs",
            timestamp=start.isoformat(),
        )["memory_id"]
        # borderline for the heuristics: not linked at encoding, left for the LLM to judge
        chain = client.get(f"/api/v1/memories/{older}/supersessions").json()
        assert chain["superseded_by"] == []
        assert _agents(client)["supersession"]["detail"]["pending"] >= 1

        review = _run_agent(client, "supersession")
        assert review["mode"] == "llm" and review["changed"] >= 1, review
        chain = client.get(f"/api/v1/memories/{older}/supersessions").json()
        assert [e["newer_id"] for e in chain["superseded_by"]] == [newer]

        episodes = _run_agent(client, "episoding")
        assert episodes["described_llm"] >= 1, episodes
        [auth] = client.get("/api/v1/episodes", params={"project": "auth"}).json()["items"]
        assert auth["described_by"] == "llm" and auth["title"] == "Login refactor"
        assert auth["concepts"] == ["login refactor", "remember-me cookie"]

        merged = _run_agent(client, "consolidation")
        assert merged["merged"] == 1 and merged["llm_summaries"] == 1, merged
        gist = _memory(client, _memory(client, a)["merged_into"])
        assert gist["metadata"]["consolidation"]["summary_by"] == "llm"
        assert gist["summary"] == "Frobnicator cache: quartz-7 volume, on the build host."
        assert gist["content"] == TWIN_B  # the content is never the LLM's

        usage = client.get("/api/v1/llm/usage").json()
        operations = {g["key"] for g in usage["by_operation"]}
        assert {"supersession", "episode_describe", "gist"} <= operations, operations
        assert usage["totals"]["failures"] == 0


# ---- 3. episodes -----------------------------------------------------------------------------


def test_episodes_group_past_memories_per_project_and_announce_closing(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(**QUIET)
    start = (datetime.now(UTC) - timedelta(days=2)).replace(microsecond=0)
    plan = [  # (project, minutes after start, content); two alpha bursts 90 min apart
        ("alpha", 0, "Started the login refactor in auth/session.py."),
        ("alpha", 3, "The login refactor broke the remember-me cookie."),
        ("alpha", 6, "Fixed the remember-me cookie by renewing it on refresh."),
        ("beta", 10, "Benchmarked the image resizer with pillow-simd."),
        ("beta", 14, "The image resizer is 3x faster with pillow-simd."),
        ("alpha", 96, "Wrote the release notes for version 2.4 of the web app."),
        ("alpha", 99, "Tagged release 2.4 and pushed the tag to origin."),
    ]
    ids: dict[tuple[str, int], str] = {}
    for project, minutes, content in reversed(plan):  # arrival order is not time order
        when = (start + timedelta(minutes=minutes)).isoformat()
        ids[(project, minutes)] = remember(client, content, project=project, timestamp=when)[
            "memory_id"
        ]

    summary = _run_agent(client, "episoding")
    assert summary["assigned"] == 7
    assert summary["closed"] == 3 and summary["open"] == 0
    assert summary["described_heuristic"] == 3 and summary["described_llm"] == 0

    alpha = client.get("/api/v1/episodes", params={"project": "alpha"}).json()["items"]
    beta = client.get("/api/v1/episodes", params={"project": "beta"}).json()["items"]
    assert [e["memory_count"] for e in alpha] == [2, 3]  # newest first
    assert [e["memory_count"] for e in beta] == [2]
    for episode in alpha + beta:
        assert episode["state"] == "closed" and episode["title"].strip()
        assert episode["described_by"] == "heuristic"
    first = alpha[1]
    assert datetime.fromisoformat(first["started_at"]) == start
    assert datetime.fromisoformat(first["ended_at"]) == start + timedelta(minutes=6)

    detail = client.get(f"/api/v1/episodes/{first['id']}").json()
    assert [m["id"] for m in detail["memories"]] == [ids[("alpha", m)] for m in (0, 3, 6)]
    stamps = [m["timestamp"] for m in detail["memories"]]
    assert stamps == sorted(stamps)
    release = client.get(f"/api/v1/episodes/{alpha[0]['id']}").json()
    assert [m["id"] for m in release["memories"]] == [ids[("alpha", m)] for m in (96, 99)]
    assert client.get("/api/v1/episodes/no-such-episode").status_code == 404

    def closed_events() -> list[dict[str, Any]]:
        activity = client.get("/api/v1/activity", params={"types": "episode_closed"})
        assert activity.status_code == 200, activity.text
        items: list[dict[str, Any]] = activity.json()["items"]
        return items if len(items) >= 3 else []

    events = _wait_for(closed_events, "three EpisodeClosed events")
    by_episode = {e["payload"]["episode_id"]: e["payload"] for e in events}
    assert set(by_episode) == {e["id"] for e in alpha + beta}
    assert by_episode[first["id"]]["memory_ids"] == [ids[("alpha", m)] for m in (0, 3, 6)]
    assert by_episode[first["id"]]["project"] == "alpha"
    assert by_episode[first["id"]]["title"] == first["title"]

    listed = client.get("/api/v1/episodes").json()["items"]
    again = _run_agent(client, "episoding")  # nothing new: nothing changes
    assert again["assigned"] == 0 and again["closed"] == 0
    assert client.get("/api/v1/episodes").json()["items"] == listed


# ---- 4. consolidation --------------------------------------------------------------------------

QUESTIONS = [
    "where does the frobnicator cache live",
    "quartz-7 volume on the build host",
    "deploy the web app to production",
    "nightly backup to the S3 bucket",
]


@dataclasses.dataclass
class Merged:
    a: str
    b: str
    others: list[str]
    gist: str
    before: dict[str, list[str]]  # each question's answer before the merge


def _merge_twins(client: TestClient) -> Merged:
    """Remember the twins and the rest, ask the questions, run one consolidation cycle."""
    a = remember(client, TWIN_A, project="ops")["memory_id"]
    b = remember(client, TWIN_B, project="ops")["memory_id"]
    others = [remember(client, t, project="ops")["memory_id"] for t in LOOKALIKES + OTHERS]
    # the premise: the encoder kept the pair apart (below its near-duplicate threshold)
    assert a != b
    assert _memory(client, a)["state"] == _memory(client, b)["state"] == "active"
    before = {q: _ids(query(client, q, limit=10)) for q in QUESTIONS}
    assert set(before[QUESTIONS[0]][:2]) == {a, b}

    summary = _run_agent(client, "consolidation")
    assert summary["merged"] == 1 and summary["merged_sources"] == 2, summary
    assert summary["decayed"] == 0  # everything is inside the grace period
    _encoded(client)
    gist = _memory(client, a)["merged_into"]
    assert gist
    return Merged(a, b, others, gist, before)


def test_consolidation_merges_near_duplicates_reversibly_and_idempotently(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(**QUIET)
    m = _merge_twins(client)
    source_a, source_b = _memory(client, m.a), _memory(client, m.b)
    assert source_b["merged_into"] == m.gist
    assert source_a["state"] == source_b["state"] == "merged"
    gist = _memory(client, m.gist)
    assert gist["state"] == "active" and gist["project"] == "ops"
    assert gist["metadata"]["consolidation"]["gist_of"] == [m.a, m.b]
    assert "quartz-7" in gist["content"] and "build host" in gist["content"]
    for other in m.others:  # look-alikes and unrelated memories are untouched
        assert _memory(client, other)["state"] == "active"
    # the fact is still found by a specific query: through the gist, not its sources
    for q in QUESTIONS[:2]:
        found = _ids(query(client, q, limit=5))
        assert found[0] == m.gist, (q, found)
        assert m.a not in found and m.b not in found
    for q in QUESTIONS[2:]:  # the other answers are still there; the gist stands for the pair
        now = _ids(query(client, q, limit=10))
        assert set(now) - {m.gist} == set(m.before[q]) - {m.a, m.b}, q

    states = _by_state(client)
    assert states == {"active": 5, "merged": 2}
    second = _run_agent(client, "consolidation")  # a cycle run twice changes nothing
    assert (second["merged"], second["decayed"], second["pruned"], second["archived"]) == (0,) * 4
    assert _by_state(client) == states

    history = client.get("/api/v1/consolidation/history").json()["items"]
    assert [h["trigger"] for h in history] == ["manual", "manual"]
    assert history[0]["counts"]["merged"] == 0 and history[1]["counts"]["merged"] == 1

    undone = client.post(f"/api/v1/memories/{m.gist}/unmerge")
    assert undone.status_code == 200, undone.text
    assert sorted(undone.json()["restored"]) == sorted([m.a, m.b])
    assert undone.json()["gist_state"] == "archived"
    assert client.post(f"/api/v1/memories/{m.gist}/unmerge").status_code == 422
    for memory_id in (m.a, m.b):
        restored = _memory(client, memory_id)
        assert restored["state"] == "active" and restored["merged_into"] is None
    assert _memory(client, m.gist)["state"] == "archived"  # kept, never deleted
    assert _by_state(client) == {"active": 6, "archived": 1}
    for q in QUESTIONS:  # recall answers with the same memories as before the merge
        answer = query(client, q, limit=10, explain=True)
        assert set(_ids(answer)) == set(m.before[q]), q  # the undone gist never comes back


def test_merge_then_unmerge_restores_the_order_of_recall_results(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(**QUIET)
    m = _merge_twins(client)
    assert client.post(f"/api/v1/memories/{m.gist}/unmerge").status_code == 200
    for q in QUESTIONS:
        assert _ids(query(client, q, limit=10)) == m.before[q], q


# ---- 5. decay and the archived fallback ------------------------------------------------------

ZEPHYR = "The zephyr-9 calibration constant is 0.0172, measured by the sensor team."
SENSOR_NOTES = [
    "The sensor team publishes its lab measurements every Monday morning.",
    "The sensor team calibrates the thermal probes before each run.",
    "Calibration runs of the sensor team use the hopper cluster.",
    "Lunch options near the office include a noodle bar.",
]


def _age(client: TestClient, memory_id: str, days: float) -> None:
    """Make a memory ``days`` old and untouched since, through the daemon's own writer."""
    daemon = client.daemon  # type: ignore[attr-defined]
    then = (datetime.now(UTC) - timedelta(days=days)).isoformat()

    def work(conn: Any) -> None:
        conn.execute(
            "UPDATE memories SET created_at = ?, last_accessed_at = NULL, access_count = 0"
            " WHERE id = ?",
            (then, memory_id),
        )

    client.portal.call(daemon.db.run_write, work)  # type: ignore[union-attr]


def test_decay_archives_an_old_memory_and_recall_falls_back_to_it(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(**QUIET)
    old = remember(client, ZEPHYR, project="lab")["memory_id"]
    live = [remember(client, t, project="lab")["memory_id"] for t in SENSOR_NOTES]
    shared = "sensor team calibration"  # live memories answer it well
    assert old in _ids(query(client, shared, limit=3))
    _age(client, old, 400)

    summary = _run_agent(client, "consolidation")
    assert summary["archived"] == 1 and summary["decayed"] == 1, summary
    aged = _memory(client, old)
    assert aged["state"] == "archived"
    assert aged["salience"] < 0.12  # consolidation.archive_below
    for memory_id in live:  # new memories are inside their grace period
        assert _memory(client, memory_id)["state"] == "active"
    assert _by_state(client) == {"active": 4, "archived": 1}

    answer = query(client, shared, limit=3, explain=True)
    assert old not in _ids(answer)  # a better live answer exists: no fallback
    assert [r["memory"]["state"] for r in answer["results"]] == ["active"] * 3
    only = query(client, "zephyr-9 calibration constant", limit=3, explain=True)
    assert _ids(only)[0] == old  # a query only it answers: it comes back, marked
    top = only["results"][0]
    assert top["memory"]["state"] == "archived"
    assert top["explain"]["archived_fallback"] is True
    assert top["explain"]["contributions"]["archived"] < 0
    assert all(not r["explain"].get("archived_fallback") for r in only["results"][1:])
    # asked for live memories explicitly: no fallback
    assert old not in _ids(query(client, "zephyr-9 calibration constant", state=["active"]))
    again = _run_agent(client, "consolidation")  # decayed to now already: nothing moves
    assert (again["decayed"], again["archived"]) == (0, 0)


# ---- 6. the CLI against a daemon subprocess --------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaemonProc, dict[str, str]]]:
    with running(tmp_path_factory.mktemp("thinking") / "home", env=QUIET_ENV) as proc:
        env = dict(os.environ)
        env.update(QUIET_ENV)
        env.update(
            {
                "MNEMONIC_HOME": str(proc.home),
                "MNEMONIC_PORT": str(proc.port),
                "MNEMONIC_TOKEN": TOKEN,
            }
        )
        yield proc, env


def test_cli_lists_agents_runs_consolidation_and_lists_episodes(
    run: Run, served: tuple[DaemonProc, dict[str, str]]
) -> None:
    proc, env = served
    start = (datetime.now(UTC) - timedelta(days=1)).replace(microsecond=0)
    ids: list[str] = []
    with proc.client() as http:
        for n, (project, text) in enumerate(
            [("ops", TWIN_A), ("ops", TWIN_B), ("ops", OTHERS[0]), ("web", LOOKALIKES[0])]
        ):
            response = http.post(
                "/api/v1/memories",
                params={"wait": "true"},
                json={
                    "content": text,
                    "project": project,
                    "timestamp": (start + timedelta(minutes=n)).isoformat(),
                },
            )
            assert response.status_code == 201, response.text
            ids.append(response.json()["memory_id"])

    done = cli(env, "agents", "--json")  # once as a real process
    assert done.returncode == 0, done.stderr
    listed = {a["name"]: a for a in json.loads(done.stdout)["items"]}
    assert sorted(listed) == AGENTS
    assert listed["episoding"]["schedule"]["interval_s"] == 3600
    assert listed["consolidation"]["last_run"] is None

    code, out, err = run(env, "run", "consolidation", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["agent"] == "consolidation" and record["run"]["ok"] is True
    assert record["run"]["trigger"] == "manual"
    assert record["run"]["summary"]["merged"] == 1
    assert record["run"]["summary"]["merged_sources"] == 2

    code, out, err = run(env, "agents", "--json")
    assert code == 0, err
    after = {a["name"]: a for a in json.loads(out)["items"]}
    assert after["consolidation"]["last_run"]["summary"] == record["run"]["summary"]
    assert after["consolidation"]["runs"] == 1

    code, out, err = run(env, "run", "episoding", "--json")
    assert code == 0, err
    assert json.loads(out)["run"]["summary"]["closed"] == 2
    code, out, err = run(env, "episodes", "--json")
    assert code == 0, err
    episodes = json.loads(out)["items"]
    assert sorted(e["project"] for e in episodes) == ["ops", "web"]
    assert all(e["state"] == "closed" and e["title"] for e in episodes)
    [ops] = [e for e in episodes if e["project"] == "ops"]
    code, out, err = run(env, "episodes", "show", ops["id"], "--json")
    assert code == 0, err
    members = json.loads(out)["memories"]
    # the merged sources stay in their episode (the gist, dated like its newest source,
    # joins it too)
    assert [m["id"] for m in members if m["id"] in ids] == ids[:3]
    assert [m["state"] for m in members if m["id"] in ids[:2]] == ["merged", "merged"]
    code, out, err = run(env, "episodes", "--project", "web", "--json")
    assert code == 0, err
    assert [e["project"] for e in json.loads(out)["items"]] == ["web"]

    code, out, err = run(env, "run", "no-such-agent", "--json")
    assert code != 0 and "404" in err and out == ""
