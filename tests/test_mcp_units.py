"""Pure pieces of the MCP server: project of a session, handoff text, usage summary, error
text, the tool argument vocabularies; and the promise that handoffs never decay or merge."""

from __future__ import annotations

import typing
from pathlib import Path

import numpy as np
import pytest

from mnemonic.cognition.decay import TYPE_CODES, DecayParams, Rows, decay
from mnemonic.cognition.merging import Candidate, MergeParams, clusters
from mnemonic.config import ProjectSpec
from mnemonic.mcp.backend import error_text
from mnemonic.mcp.kit import MemoryTypeName, SourceName, StateName
from mnemonic.mcp.session import SessionState, project_of, root_paths
from mnemonic.mcp.tools_memory import handoff_text
from mnemonic.perception import ProjectResolver
from mnemonic.store.models import MemoryState, MemoryType, Source
from mnemonic.store.tool_usage import percentile, summarise


def test_argument_vocabularies_match_the_store() -> None:
    assert set(typing.get_args(MemoryTypeName)) == {t.value for t in MemoryType}
    assert set(typing.get_args(SourceName)) == {s.value for s in Source}
    assert set(typing.get_args(StateName)) == {s.value for s in MemoryState}


@pytest.mark.parametrize(
    ("uris", "expected"),
    [
        (["file:///home/a/src/x"], ["/home/a/src/x"]),
        (["file://localhost/tmp/with%20space"], ["/tmp/with space"]),
        (["https://example.com/x", "file://otherhost/x", "file:///ok"], ["/ok"]),
        ([], []),
    ],
)
def test_root_paths(uris: list[str], expected: list[str]) -> None:
    assert root_paths(uris) == expected


def test_project_of_roots_then_cwd_through_configured_projects(tmp_path: Path) -> None:
    configured = tmp_path / "code" / "mn"
    (configured / "sub").mkdir(parents=True)
    (tmp_path / "plain-folder").mkdir()
    resolver = ProjectResolver(
        [ProjectSpec(name="mnemonic", paths=[str(configured)], aliases=["mn"])],
        home=str(tmp_path / "home"),
    )
    cases = [
        ([str(configured / "sub")], None, "mnemonic"),  # a root inside a configured path
        ([], str(configured), "mnemonic"),  # the working folder
        ([str(tmp_path / "plain-folder")], str(configured), "plain-folder"),  # roots first
        ([], str(tmp_path / "plain-folder"), "plain-folder"),  # else the folder's name
        ([], None, ""),
        ([], str(tmp_path / "home"), ""),  # the home folder names no project
    ]
    for roots, cwd, expected in cases:
        assert project_of(resolver, roots, cwd) == expected, (roots, cwd)
    assert resolver.canonical("MN") == "mnemonic"  # what a tool's project argument goes through


def test_shown_is_bounded_and_keeps_the_newest() -> None:
    state = SessionState()
    state.mark_shown(str(i) for i in range(6000))
    state.mark_shown(["0"])
    assert len(state.shown) == 5000
    assert "0" in state.shown and "999" not in state.shown and "5999" in state.shown


def test_handoff_text_is_verbatim_and_skips_empty_sections() -> None:
    text = handoff_text(
        "p", {"completed": "did A\n  - and B", "pending": " ", "to_test": "run x", "next_hint": ""}
    )
    assert text == "Handoff for project p\n\nCompleted:\ndid A\n  - and B\n\nTo test:\nrun x"
    assert handoff_text("", {"known_issues": "flaky"}) == "Handoff\n\nKnown issues:\nflaky"


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [([], 0.5, 0.0), ([5.0], 0.95, 5.0), ([1, 2, 3, 4], 0.5, 2), ([*range(1, 101)], 0.95, 95)],
)
def test_percentile_nearest_rank(values: list[float], q: float, expected: float) -> None:
    assert percentile([float(v) for v in values], q) == expected


def test_summarise_by_tool() -> None:
    rows = [("recall", 3.0, 1), ("recall", 1.0, 1), ("recall", 2.0, 0), ("status", 9.0, 1)]
    stats = summarise(rows)
    assert [(s.tool, s.calls, s.errors, s.p50_ms, s.p95_ms) for s in stats] == [
        ("recall", 3, 1, 2.0, 3.0),
        ("status", 1, 0, 9.0, 9.0),
    ]


def test_error_text_names_fields_and_the_token_rule() -> None:
    payload = {"error": "validation failed", "details": [{"field": "limit", "message": "too big"}]}
    assert error_text(422, payload) == "validation failed (limit: too big) [HTTP 422]"
    assert "MNEMONIC_TOKEN" in error_text(401, {"error": "missing or wrong bearer token"})
    assert error_text(502, "bad gateway") == "HTTP 502: bad gateway"


def test_handoffs_never_decay_even_when_configured_to() -> None:
    p = DecayParams(half_life_days={"handoff": 1.0, "general": 1.0}, grace_days=0.0)
    day = 86400.0
    rows = Rows(
        seq=np.array([1, 2], dtype=np.int64),
        type=np.array([TYPE_CODES["handoff"], TYPE_CODES["general"]], dtype=np.int64),
        state=np.zeros(2, dtype=np.int64),
        salience=np.array([0.9, 0.9]),
        utility=np.ones(2),
        created=np.zeros(2),
        accessed=np.full(2, np.nan),
    )
    out = decay(rows, np.full(2, -np.inf), 400 * day, p)
    assert out.salience[0] == 0.9 and out.state[0] == 0  # the handoff: untouched, active
    assert out.salience[1] < 0.1 and out.state[1] != 0  # a general memory decayed


def test_handoffs_never_merge() -> None:
    text = "Handoff: completed the parser; pending the lexer."
    found = {
        i: Candidate(i, f"m{i}", "p", kind, text, "2026-01-01T00:00:00")
        for i, kind in ((1, "handoff"), (2, "handoff"), (3, "general"), (4, "general"))
    }
    near = {i: [(j, 0.99) for j in found if j != i] for i in found}
    got = clusters([1, 2, 3, 4], near, found, MergeParams())
    assert got == [[3, 4]]  # the two identical general memories merge, the handoffs do not
