"""Table tests of the CLI's pure pieces: exit codes, URLs, `--set` parsing, status and
event formatting."""

from __future__ import annotations

from itertools import islice
from typing import Any

import pytest
from support.daemon_proc import free_port

from mnemonic.cli.browse import exclusion_lines, projects_lines, show_lines, stats_lines
from mnemonic.cli.client import ApiError, ws_url
from mnemonic.cli.exits import exit_for_status
from mnemonic.cli.memories import recall_lines, title
from mnemonic.cli.runtime import daemon_url, merge_overrides, parse_assignments
from mnemonic.cli.status import (
    format_duration,
    last_error,
    memory_counts,
    status_lines,
    watchers,
)
from mnemonic.cli.watch import (
    backoff,
    close_exit,
    complete_types,
    format_event,
    parse_types,
    reconnect,
    short_value,
    unknown_types,
)
from mnemonic.watchers.clipboard import disabled_reason


@pytest.mark.parametrize(
    ("status", "code"),
    [
        *[(400, 65), (404, 65), (409, 65), (413, 65), (415, 65), (422, 65)],
        *[(401, 78), (403, 78), (429, 75), (503, 75), (500, 70), (502, 70)],
    ],
)
def test_http_status_to_exit_code(status: int, code: int) -> None:
    assert exit_for_status(status) == code


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"error": "memory 'x' not found", "status": 404}, "memory 'x' not found"),
        (
            {"error": "validation failed", "details": [{"field": "content", "message": "short"}]},
            "validation failed (content: short)",
        ),
        ("<html>not us</html>", "<html>not us</html>"),
        (None, "None"),
    ],
)
def test_api_error_message(payload: Any, message: str) -> None:
    assert ApiError(400, payload).message == message


@pytest.mark.parametrize(
    ("base", "params", "url"),
    [
        ("http://127.0.0.1:9999", {}, "ws://127.0.0.1:9999/ws"),
        (
            "http://127.0.0.1:1",
            {"types": "a,b", "project": None},
            "ws://127.0.0.1:1/ws?types=a%2Cb",
        ),
        ("http://[::1]:5", {"project": "my proj"}, "ws://[::1]:5/ws?project=my+proj"),
        ("https://localhost:5", {"types": ""}, "wss://localhost:5/ws"),
    ],
)
def test_ws_url(base: str, params: dict[str, str | None], url: str) -> None:
    assert ws_url(base, "/ws", params) == url


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:9999"),
        ("localhost", "http://localhost:9999"),
        ("::1", "http://[::1]:9999"),
        ("0.0.0.0", "http://127.0.0.1:9999"),
        ("::", "http://127.0.0.1:9999"),
    ],
)
def test_daemon_url(host: str, url: str) -> None:
    assert daemon_url(host, 9999) == url


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], {}),
        (["server.port=9998"], {"server": {"port": 9998}}),
        (
            ["recall.default_states=[active]", "recall.fusion=rrf"],
            {"recall": {"default_states": ["active"], "fusion": "rrf"}},
        ),
        (
            ["recall.relation_weights.similar=0.5"],
            {"recall": {"relation_weights": {"similar": 0.5}}},
        ),
        (["server.host="], {"server": {"host": ""}}),
        (["embedding.model=a=b"], {"embedding": {"model": "a=b"}}),
    ],
)
def test_parse_assignments(items: list[str], expected: dict[str, Any]) -> None:
    assert parse_assignments(items) == expected


@pytest.mark.parametrize(
    "item", ["server.port", "port=1", ".port=1", "server..port=1", "recall.x=[unclosed"]
)
def test_parse_assignments_refuses(item: str) -> None:
    with pytest.raises(ValueError, match=r"expected|YAML"):
        parse_assignments([item])


def test_parse_assignments_refuses_a_value_and_a_child_of_it() -> None:
    with pytest.raises(ValueError, match="already set"):
        parse_assignments(["recall.fusion=rrf", "recall.fusion.x=1"])


def test_merge_overrides_keeps_lower_keys_and_lets_higher_win() -> None:
    lower = {"server": {"port": "1", "host": "localhost"}, "recall": {"rrf_k": 3}}
    higher = {"server": {"port": 2}}
    assert merge_overrides(lower, higher) == {
        "server": {"port": 2, "host": "localhost"},
        "recall": {"rrf_k": 3},
    }
    assert lower["server"]["port"] == "1"  # inputs untouched


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "?"),
        (-1, "?"),
        (0, "0s"),
        (42.9, "42s"),
        (307, "5m 07s"),
        (3 * 3600 + 4 * 60 + 5, "3h 04m"),
        (2 * 86400 + 3 * 3600, "2d 03h"),
    ],
)
def test_format_duration(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text


HEALTH: dict[str, Any] = {
    "status": "degraded",
    "reasons": ["1 raw memories failed encoding (see /api/v1/stats)"],
    "version": "0.1.0",
    "pid": 4242,
    "url": "http://127.0.0.1:9999",
    "uptime_s": 3725.0,
    "memories": {
        "memories_active": 3,
        "memories_fading": 1,
        "memories_archived": 2,
        "raw_pending": 0,
        "raw_failed": 1,
    },
    "embedding": {"model": "all-MiniLM-L6-v2-int8", "dim": 384, "backlog": 0},
    "vector_index": {"path": "numpy-exact"},
}
STATS: dict[str, Any] = {
    "memories": {"total": 6, "by_state": {"active": 3, "fading": 1, "archived": 2}},
    "agents": [{"name": "encoding", "state": "running", "restarts": 0, "last_error": None}],
    "last_errors": [{"at": "2026-01-02T03:04:05+00:00", "component": "encoding", "error": "boom"}],
}


def test_status_lines_with_health_and_stats() -> None:
    lines = status_lines(HEALTH, STATS)
    assert lines[0] == "mnemonic 0.1.0 is running (degraded), pid 4242, up 1h 02m"
    assert "url: http://127.0.0.1:9999" in lines
    assert "degraded: 1 raw memories failed encoding (see /api/v1/stats)" in lines
    assert "memories: 6 (3 active, 1 fading, 2 archived); raw: 0 pending, 1 failed" in lines
    assert "embedding: all-MiniLM-L6-v2-int8 (384-d), backlog 0; vectors: numpy-exact" in lines
    assert "agents: encoding running" in lines
    assert lines[-1] == "last error: 2026-01-02T03:04:05+00:00 encoding: boom"


def test_status_lines_degrade_when_fields_are_missing() -> None:
    assert status_lines({}, None) == ["mnemonic ? is running (?), pid ?, up ?", "memories: 0"]
    old = {"status": "ok", "version": "0.0.9", "uptime_s": 5, "memories": {"memories_active": 2}}
    assert status_lines(old, None)[1] == "memories: 2 (2 active)"


@pytest.mark.parametrize(
    ("stats", "expected"),
    [
        (None, None),
        ({"last_errors": []}, None),
        (STATS, STATS["last_errors"][0]),
        (
            {"agents": [{"name": "enc", "last_error": "crashed", "last_error_at": "t"}]},
            {"at": "t", "component": "enc", "error": "crashed"},
        ),
    ],
)
def test_last_error(stats: dict[str, Any] | None, expected: dict[str, Any] | None) -> None:
    assert last_error(HEALTH, stats) == expected


def test_memory_counts_prefers_stats() -> None:
    assert memory_counts(HEALTH, STATS) == {"active": 3, "fading": 1, "archived": 2}
    assert memory_counts(HEALTH, None) == {"active": 3, "fading": 1, "archived": 2}


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        (None, []),
        ("", []),
        ("memory_encoded", ["memory_encoded"]),
        (" a, b ,a,, ", ["a", "b"]),
    ],
)
def test_parse_types(raw: str | None, names: list[str]) -> None:
    assert parse_types(raw) == names


def test_unknown_types_and_completion() -> None:
    assert unknown_types(["memory_encoded", "nope", "agent_error", "alsono"]) == ["alsono", "nope"]
    assert complete_types("memory_enc") == ["memory_encoded", "memory_encoding_failed"]
    assert complete_types("agent_error,memory_am") == ["agent_error,memory_amended"]
    assert "raw_memory_created" in complete_types("")


@pytest.mark.parametrize(
    ("code", "exit_code"), [(1008, 64), (1013, 75), (1000, 69), (1001, 69), (1012, 69), (None, 69)]
)
def test_close_exit(code: int | None, exit_code: int) -> None:
    assert close_exit(code) == exit_code


def test_format_event_is_one_short_line() -> None:
    message = {
        "type": "raw_memory_created",
        "at": "2026-01-02T03:04:05.123456+00:00",
        "context": {"id": "c1", "parent_id": None},
        "payload": {
            "raw_id": "r1",
            "memory_id": None,
            "source": "api",
            "project": "",
            "content": "line one\nline two " + "x" * 200,
            "content_truncated": True,
        },
    }
    line = format_event(message)
    time_part, kind, *rest = line.split(" ")
    assert len(time_part) == 8 and time_part.count(":") == 2
    assert kind == "raw_memory_created"
    assert rest[:2] == ["raw_id=r1", "source=api"]
    assert "memory_id" not in line and "project" not in line and "truncated" not in line
    assert "content=line one line two xxx" in line and line.endswith("…")
    assert "\n" not in line


def test_format_event_tolerates_odd_messages() -> None:
    assert format_event({"type": "x", "at": "not a time", "payload": {"n": [1, 2]}}) == (
        "not a time x n=[1, 2]"
    )
    assert format_event({}) == " ?"
    assert len(format_event({"type": "t", "payload": {"k": "v" * 50}} | {"at": ""}, 20)) == 20


@pytest.mark.parametrize(
    ("value", "text"),
    [("a\tb  c", "a b c"), ({"k": 1}, '{"k": 1}'), ("y" * 70, "y" * 59 + "…"), (3, "3")],
)
def test_short_value(value: Any, text: str) -> None:
    assert short_value(value) == text


# --- recall, list, show, projects, exclusions, stats -----------------------------------

MEMORY_ID = "0190f2a0-1234-7000-8000-00000000abcd"
FILE_MEMORY: dict[str, Any] = {
    "id": MEMORY_ID,
    "type": "general",
    "source": "filesystem",
    "project": "shop",
    "state": "active",
    "timestamp": "2026-03-14T15:09:26+00:00",
    "summary": "import os",
    "content": "import os\nprint('checkout')",
    "metadata": {"path": "/home/me/shop/checkout.py", "watcher": "filesystem"},
}


@pytest.mark.parametrize(
    ("memory", "text"),
    [
        (FILE_MEMORY, "/home/me/shop/checkout.py"),
        ({**FILE_MEMORY, "source": "cli"}, "import os"),  # a path in other metadata: no title
        ({**FILE_MEMORY, "metadata": {}}, "import os"),
        ({"summary": None, "content": "only content"}, "only content"),
        ({}, ""),
    ],
)
def test_title(memory: dict[str, Any], text: str) -> None:
    assert title(memory) == text


def test_recall_lines_show_the_id_source_date_and_project() -> None:
    result = {"results": [{"score": 0.8123, "memory": FILE_MEMORY}], "took_ms": 3.2}
    head, body = recall_lines(result, explain=False)
    fields = head.split("  ")
    assert fields[0] == "0.812"
    assert fields[1] == MEMORY_ID  # whole: forget/amend/show need it
    assert fields[2] == "filesystem/general"
    assert fields[3].startswith("2026-03-1")  # local time: the day may shift by zone
    assert fields[4] == "shop"
    assert body == "       /home/me/shop/checkout.py"  # a file is titled by its path
    explained = {**result["results"][0], "explain": {"contributions": {"vector": 0.5}}}
    assert recall_lines({"results": [explained]}, explain=True)[2] == "       why: vector 0.500"


def test_show_lines_have_the_links_and_the_history() -> None:
    ctx = {
        "memory": {**FILE_MEMORY, "concepts": ["checkout", "payments"]},
        "associations": [
            {"relation": "similar", "strength": 0.5, "memory": {"id": "m2", "summary": "cart"}}
        ],
        "neighbours": [{"id": "m3", "summary": "earlier note"}],
        "amendments": [
            {
                "old_content": "print('old')",
                "new_content": "x",
                "reason": "typo",
                "created_at": "2026-03-15T10:00:00+00:00",
            }
        ],
    }
    lines = show_lines(ctx)
    assert f"id: {MEMORY_ID}" in lines and "project: shop" in lines
    assert "path: /home/me/shop/checkout.py" in lines
    assert "concepts: checkout, payments" in lines
    assert "  similar 0.50 m2 cart" in lines
    assert "  m3 earlier note" in lines
    assert "history (1 amendments):" in lines
    assert "    was: print('old')" in lines
    assert show_lines({}) == ["", ""]


def test_projects_exclusions_and_stats_lines() -> None:
    rows = projects_lines(
        [
            {"name": "shop", "memories": 12, "active": 10, "first_at": None, "last_at": None},
            {"name": None, "memories": 3, "active": 3},
        ]
    )
    assert rows[0].split()[:4] == ["shop", "12", "(10", "active)"]
    assert rows[1].startswith("(none)")
    assert exclusion_lines([{"path": "/a", "origin": "user", "reason": "manual"}]) == [
        "/a  user: manual"
    ]
    stats = {
        "memories": {"total": 4, "by_state": {"active": 4, "fading": 0}, "associations": 7},
        "raw": {"by_status": {"encoded": 4}},
        "bus": {"published": 9, "dropped": 0},
    }
    lines = stats_lines(stats)
    assert "memories: 4 (active 4)" in lines
    assert "associations: 7" in lines and "raw: encoded 4" in lines
    assert stats_lines({})[0] == "memories: 0 (none)"


# --- watchers in status ----------------------------------------------------------------

CLIPBOARD_OFF = {
    "name": "watcher:clipboard",
    "state": "finished",
    "detail": {"state": "disabled", "message": "no clipboard here (no tool); install xclip"},
}


def test_status_shows_a_disabled_watcher_with_its_reason() -> None:
    health = {**HEALTH, "agents": [{"name": "encoding", "state": "running"}, CLIPBOARD_OFF]}
    lines = status_lines(health, STATS)
    assert "agents: encoding running, watcher:clipboard disabled" in lines
    assert "clipboard watcher disabled: no clipboard here (no tool); install xclip" in lines
    assert watchers(health) == {
        "clipboard": {"state": "disabled", "message": CLIPBOARD_OFF["detail"]["message"]}
    }


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            Exception(
                "Pyperclip could not find a copy/paste mechanism for your system. For more "
                "information, please visit https://pyperclip.readthedocs.io/en/latest/"
            ),
            "Pyperclip could not find a copy/paste mechanism for your system",
        ),
        (OSError(2, "No such file or directory"), "[Errno 2] No such file or directory"),
        (OSError(), "OSError"),
        (Exception("x" * 300), "x" * 119 + "…"),
    ],
)
def test_clipboard_disabled_reason_is_one_short_sentence(error: Exception, reason: str) -> None:
    assert disabled_reason(error) == reason


# --- watch reconnects --------------------------------------------------------------------


def test_backoff_doubles_up_to_its_cap() -> None:
    assert list(islice(backoff(0.25, 5.0), 7)) == [0.25, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_reconnect_gives_up_after_its_time_without_a_daemon() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    url = f"ws://127.0.0.1:{free_port()}/ws"  # nothing listens there
    assert reconnect(url, "token", 3.0, sleep=sleep, clock=lambda: now[0]) is None
    assert slept == [0.25, 0.5, 1.0, 1.25]  # the last wait is cut to the deadline
