"""The heuristic filter (every stage and drop reason), the content score, the frequency
limit, runtime and automatic exclusions, the LLM gate hook, and project resolution.

Time is a plain number the tests move (``Ticker``); git roots are real folders in
``tmp_path``; the mixed stream uses the benign command corpus and real source files of this
repository.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mnemonic.events.types import WatcherEvent
from mnemonic.perception import (
    Accept,
    Drop,
    DropReason,
    FilterConfig,
    HeuristicFilter,
    ProjectResolver,
    ProjectSpec,
    RuntimeExclusions,
)
from mnemonic.perception.exclusions import RejectionTracker
from mnemonic.perception.filter import event_text
from mnemonic.perception.frequency import FrequencyLimiter, content_key, normalise
from mnemonic.perception.score import compile_keywords, is_blob, noise_penalties, score_text

ROOT = Path(__file__).resolve().parent.parent
BENIGN = (ROOT / "tests" / "fixtures" / "benign_commands.txt").read_text("utf-8").splitlines()
HOME = "/home/ann"


class Ticker:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def cmd(text: str, **kw: Any) -> WatcherEvent:
    return WatcherEvent(watcher="terminal", kind="command", content=text, **kw)


def edit(path: str, text: str, **kw: Any) -> WatcherEvent:
    return WatcherEvent(watcher="filesystem", kind="modified", content=text, path=path, **kw)


def make_filter(ticker: Ticker | None = None, **overrides: Any) -> HeuristicFilter:
    return HeuristicFilter(
        FilterConfig(**overrides),
        clock=ticker or Ticker(),
        home=HOME,
        resolver=ProjectResolver(home=HOME, has_git=lambda _: False),
    )


def reason(decision: Accept | Drop) -> str:
    return "accept" if isinstance(decision, Accept) else decision.reason.value


# --- stages and reasons ---------------------------------------------------------------------

STAGE_CASES = [
    # (name, event, config overrides, expected)
    ("plain command", cmd("pytest tests/test_cache.py -k eviction"), {}, "accept"),
    ("too short", cmd("ls"), {}, "too_short"),
    ("whitespace only", cmd("   \n  "), {}, "too_short"),
    ("too long", edit("/src/a.txt", "word " * 30), {"max_chars": 100}, "too_long"),
    (
        "metadata-only passes by its metadata",
        WatcherEvent(
            watcher="filesystem",
            kind="modified",
            content="",
            path="/src/logo.png",
            metadata_only=True,
            metadata={"bytes": 20480, "binary": True},
        ),
        {},
        "accept",
    ),
    (
        "denied content regex",
        cmd("kubectl get pods -n payments"),
        {"deny_patterns": [r"^kubectl get\b"]},
        "denied_pattern",
    ),
    ("denied file-name glob", edit("/src/app/app.min.js", "ERROR boom"), {}, "denied_pattern"),
    (
        "denied full-path glob",
        edit("/src/vendor/lib/x.py", "def f(): pass  # fixed the bug"),
        {"deny_paths": ["/src/vendor/*"]},
        "denied_pattern",
    ),
    ("progress bar", cmd("[##########          ] 50% downloading"), {}, "low_score"),
    (
        "npm warning",
        cmd("npm WARN deprecated left-pad@1.3.0: use String.padStart"),
        {},
        "low_score",
    ),
    ("a bare hash", cmd("sha256:" + "ab12" * 16), {}, "low_score"),
    (
        "git events pass a low bar",
        WatcherEvent(
            watcher="git",
            kind="commit",
            content="commit 1a2b3c4 on main in webapp by Ann: wip (1 file, +1 -1): x.py",
        ),
        {"min_score_by_source": {"git": 0.1, "terminal": 0.9}},
        "accept",
    ),
    (
        "per-source threshold",
        cmd("make deploy"),
        {"min_score_by_source": {"terminal": 0.9}},
        "low_score",
    ),
    (
        "per-kind threshold wins",
        cmd("make deploy"),
        {"min_score_by_source": {"terminal": 0.9, "terminal:command": 0.1}},
        "accept",
    ),
]


@pytest.mark.parametrize(
    ("event", "overrides", "expected"),
    [c[1:] for c in STAGE_CASES],
    ids=[c[0] for c in STAGE_CASES],
)
def test_stage(event: WatcherEvent, overrides: dict[str, Any], expected: str) -> None:
    assert reason(make_filter(**overrides).check(event)) == expected


def test_excluded_path_covers_the_folder_and_working_directory() -> None:
    f = make_filter()
    f.exclusions.add("/src/secret-project")
    inside = f.check(edit("/src/secret-project/notes/todo.md", "TODO: decide on the schema"))
    assert isinstance(inside, Drop) and inside.reason is DropReason.EXCLUDED_PATH
    assert inside.detail == "/src/secret-project"
    in_cwd = f.check(cmd("make release because the fix is in", cwd="/src/secret-project/app"))
    assert reason(in_cwd) == "excluded_path"
    assert reason(f.check(edit("/src/secret-projects/a.md", "decided: keep it"))) == "accept"
    assert f.exclusions.remove("/src/secret-project/")
    assert reason(f.check(edit("/src/secret-project/b.md", "decided: keep it"))) == "accept"


def test_llm_rejected_only_through_decide() -> None:
    seen: list[float] = []

    async def gate(event: WatcherEvent, score: float) -> bool:
        seen.append(score)
        return "keep" in event.content

    f = make_filter()
    f.llm_gate = gate
    kept = asyncio.run(f.decide(cmd("keep this deploy note")))
    dropped = asyncio.run(f.decide(cmd("drop this deploy note")))
    assert isinstance(kept, Accept) and reason(dropped) == "llm_rejected"
    assert len(seen) == 2 and all(0 <= s <= 1 for s in seen)
    assert reason(asyncio.run(f.decide(cmd("ls")))) == "too_short"  # gate not asked
    assert len(seen) == 2
    stats = f.stats()
    assert stats["accepted"] == 1 and stats["dropped"]["llm_rejected"] == 1


def test_a_failing_llm_gate_keeps_the_event() -> None:
    async def gate(event: WatcherEvent, score: float) -> bool:
        raise TimeoutError("model unreachable")

    f = make_filter()
    f.llm_gate = gate
    assert isinstance(asyncio.run(f.decide(cmd("deploy the hotfix now"))), Accept)
    assert f.stats()["llm_errors"] == 1


def test_stats_count_every_reason() -> None:
    ticker = Ticker()
    f = make_filter(ticker, frequency_max=1)
    f.exclusions.add("/x")
    events = [
        cmd("ok"),  # too_short
        edit("/a/b.txt", "x" * 200_000),  # too_long
        edit("/a/b.map", "boot"),  # denied_pattern
        cmd("echo same thing"),
        cmd("echo same thing"),  # too_frequent
        cmd("[==========>         ] 51%"),  # low_score
        edit("/x/y.txt", "anything at all"),  # excluded_path
    ]
    decisions = [f.check(e) for e in events]
    stats = f.stats()
    assert stats["seen"] == 7 and stats["accepted"] == 1
    assert stats["dropped"] == {
        "too_short": 1,
        "too_long": 1,
        "denied_pattern": 1,
        "too_frequent": 1,
        "low_score": 1,
        "excluded_path": 1,
        "llm_rejected": 0,
    }
    assert [reason(d) for d in decisions].count("accept") == 1
    assert set(stats["dropped"]) == {r.value for r in DropReason}


def test_accept_carries_score_and_project() -> None:
    f = HeuristicFilter(
        FilterConfig(),
        home=HOME,
        resolver=ProjectResolver([ProjectSpec(name="shop", paths=["/src/webapp"])], home=HOME),
    )
    decision = f.check(edit("/src/webapp/cart.py", "# FIXME: race in eviction, fixed below"))
    assert isinstance(decision, Accept)
    assert decision.project == "shop" and decision.score > 0.5


def test_invalid_deny_regex_is_a_config_error() -> None:
    with pytest.raises(ValidationError, match="invalid regular expression"):
        FilterConfig(deny_patterns=["(unclosed"])


def test_metadata_text_of_metadata_only_events() -> None:
    event = WatcherEvent(
        watcher="filesystem",
        kind="created",
        content="",
        path="/p/big.bin",
        metadata_only=True,
        metadata={"bytes": 5, "nested": {"x": 1}, "binary": True},
    )
    assert event_text(event) == "created /p/big.bin bytes=5 binary=True"


# --- the content score ------------------------------------------------------------------------

KEYWORDS = compile_keywords({"error": 0.15, "root cause": 0.2, "fixed": 0.15, "todo": 0.1})

SCORE_CASES = [
    ("neutral text", "deploy the api to staging", 0.5, (), ()),
    ("one keyword", "Error while connecting", 0.65, ("error",), ()),
    ("a keyword counts once", "error error ERROR", 0.65, ("error",), ()),
    ("multi-word keyword", "the root  cause was DNS", 0.7, ("root cause",), ()),
    ("cap", "error, root cause, fixed, todo", 0.9, ("error", "fixed", "root cause", "todo"), ()),
    ("not inside words", "terrorism todos unfixed", 0.5, (), ()),
    ("progress bar", "[########      ] 57%", 0.1, (), ("progress_bar",)),
    ("tqdm bar", " 45%|████      | 45/100", 0.1, (), ("progress_bar",)),
    ("rich bar", "━━━━━━━━━━━━ 12.5/40.1 MB", 0.1, (), ("progress_bar",)),
    ("npm warn", "npm WARN deprecated x@1", 0.1, (), ("package_warning",)),
    ("repetitive", "retry\n" * 8, 0.2, (), ("repetitive",)),
    ("symbols", "{}[]()<>;:,./\\|!@#$%^&*()_+=-{}[]()<>;:,", 0.3, (), ("symbols",)),
]


@pytest.mark.parametrize(
    ("text", "value", "words", "noise"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(text: str, value: float, words: tuple[str, ...], noise: tuple[str, ...]) -> None:
    score = score_text(text, KEYWORDS, keyword_cap=0.4)
    assert score.value == pytest.approx(value)
    assert score.keywords == words and score.noise == noise


BLOB_CASES = [
    ("sha1", "bce0d797cbedbc32836a18f3c903b7cf7e41f3bd", True),
    ("sha256", "a59600d567a4ad3c6f2b6386206d6f0d497e3f121eeb32823f711d5828d3d192", True),
    ("base64", "QNZmjF68qGbFfADQxP39r2FXwa4WnCIhEnwp3eyNZoMYVo6RCTszCyJGehECR", True),
    ("short hex", "bce0d797cbedbc32", False),
    ("identifier", "test_stream_handler_parser_retry_when_handler_request_returns_none", False),
    ("path", "src/components/Button/Button.test.tsx/src/components/Button2", False),
    ("camel case words", "ThisIsAVeryLongClassNameForTheFactoryOfFactoriesOfThings", False),
]


@pytest.mark.parametrize(
    ("run", "expected"), [c[1:] for c in BLOB_CASES], ids=[c[0] for c in BLOB_CASES]
)
def test_is_blob(run: str, expected: bool) -> None:
    assert is_blob(run) is expected


def test_blob_penalty_grows_with_its_share() -> None:
    sha = "bce0d797cbedbc32836a18f3c903b7cf7e41f3bd"
    assert noise_penalties(f"ETag: {sha}")["blob"] == 0.45
    assert noise_penalties(f"git revert --no-edit {sha}")["blob"] == 0.15
    prose = f"reverted {sha} because it broke the nightly export job, and the on-call "
    assert noise_penalties(prose)["blob"] == 0.05


def test_minified_line_is_noise() -> None:
    line = "!function(e){var t={};" + "t.a=e.b||c(d,[1,2]);" * 60 + "}()"
    assert "minified" in noise_penalties(line)


# --- frequency limit ---------------------------------------------------------------------------


def test_frequency_limit_with_a_fake_clock() -> None:
    ticker = Ticker()
    f = make_filter(ticker, frequency_max=3, frequency_window_s=600)
    decisions = []
    for i in range(5):
        ticker.now = i * 10.0
        decisions.append(reason(f.check(cmd(f"curl localhost:{8000 + i}/health"))))
    assert decisions == ["accept"] * 3 + ["too_frequent"] * 2  # digits normalised: same
    ticker.now = 600.0  # 10, 20, 30 and 40 are within the window
    assert reason(f.check(cmd("curl localhost:9000/health"))) == "too_frequent"
    ticker.now = 641.0  # now only the drop at 600 is: every occurrence counts
    assert reason(f.check(cmd("curl localhost:9000/health"))) == "accept"
    assert reason(f.check(cmd("curl example.org/health"))) == "accept"  # other content


def test_frequency_key_includes_source_and_path() -> None:
    a = content_key("filesystem", "modified", "/a.txt", "same text")
    assert a == content_key("filesystem", "modified", "/a.txt", "SAME   text")
    assert a != content_key("filesystem", "modified", "/b.txt", "same text")
    assert a != content_key("terminal", "modified", "/a.txt", "same text")
    long_a, long_b = "x" * 5000 + "tail one", "x" * 5000 + "tail two"
    assert normalise(long_a) != normalise(long_b)


def test_frequency_memory_is_bounded() -> None:
    limiter = FrequencyLimiter(max_count=1, window_s=60, max_keys=100)
    for i in range(1000):
        assert limiter.allow(str(i).encode(), 0.0)
    assert len(limiter) == 100
    assert limiter.allow(b"0", 1.0)  # forgotten, so allowed again
    assert not limiter.allow(b"999", 1.0)


# --- auto-exclusion -----------------------------------------------------------------------------


def test_a_noisy_file_is_excluded_after_the_hourly_threshold() -> None:
    ticker = Ticker()
    calls: list[tuple[str, str]] = []
    f = HeuristicFilter(
        FilterConfig(auto_exclude_per_hour=5, frequency_max=0),
        clock=ticker,
        home=HOME,
        on_auto_exclude=lambda path, why: calls.append((path, why)),
    )
    noisy = "/work/app/out/progress.txt"
    for i in range(4):
        ticker.now = i * 60.0
        assert reason(f.check(edit(noisy, f"[##########     ] {i}%"))) == "low_score"
    assert calls == [] and len(f.exclusions) == 0
    ticker.now = 300.0
    assert reason(f.check(edit(noisy, "[##########     ] 99%"))) == "low_score"
    assert calls == [(noisy, "auto:low_score")]
    assert [e.path for e in f.exclusions.list()] == [noisy]
    assert f.exclusions.list()[0].auto
    assert reason(f.check(edit(noisy, "now a real TODO: fix the bug"))) == "excluded_path"
    assert f.stats()["auto_excluded"] == 1


def test_quiet_log_tails_never_exclude_the_log() -> None:
    """A chatty log's INFO tails are dropped as low score, but the log must stay watched:
    the error it writes next is what it is read for."""
    ticker = Ticker()
    f = make_filter(ticker, auto_exclude_per_hour=3, frequency_max=0)
    log_path = "/work/app/logs/app.log"
    for i in range(20):
        ticker.now = i * 10.0
        tail = WatcherEvent(
            watcher="filesystem",
            kind="log_appended",
            content=f"2026-11-23 10:00:{i:02d} INFO request served in 3 ms",
            path=log_path,
        )
        assert reason(f.check(tail)) == "low_score"
    assert len(f.exclusions) == 0
    error = WatcherEvent(
        watcher="filesystem",
        kind="log_appended",
        content="2026-11-23 10:05:00 ERROR Traceback: ConnectionRefusedError: redis at :6379",
        path=log_path,
    )
    assert reason(f.check(error)) == "accept"


def test_rejections_spread_over_more_than_an_hour_do_not_exclude() -> None:
    ticker = Ticker()
    f = make_filter(ticker, auto_exclude_per_hour=3)
    for i in range(10):
        ticker.now = i * 1900.0  # 3 rejections always span more than an hour
        f.check(edit("/work/app/slow.txt", "[##########     ] 10%"))
    assert len(f.exclusions) == 0


def test_a_folder_needs_several_rejected_files() -> None:
    tracker = RejectionTracker(threshold=4, window_s=3600, min_files=3, home=HOME)
    assert tracker.record("/work/gen/a.txt", 0) is None
    assert tracker.record("/work/gen/a.txt", 1) is None
    assert tracker.record("/work/gen/b.txt", 2) is None
    assert tracker.record("/work/gen/c.txt", 3) == "/work/gen"


@pytest.mark.parametrize("folder", ["/tmp", HOME, "/home"])
def test_top_level_and_home_folders_are_never_auto_excluded(folder: str) -> None:
    tracker = RejectionTracker(threshold=2, window_s=3600, min_files=2, home=HOME)
    results = [tracker.record(f"{folder}/f{i}.txt", float(i)) for i in range(10)]
    assert folder not in results


def test_only_listed_watchers_are_auto_excluded() -> None:
    ticker = Ticker()
    f = make_filter(ticker, auto_exclude_per_hour=2)
    for _ in range(5):
        f.check(WatcherEvent(watcher="git", kind="worktree_changed", content="x", path="/r/a"))
    assert len(f.exclusions) == 0


def test_runtime_exclusions_set() -> None:
    ex = RuntimeExclusions()
    first = ex.add("~/notes/../notes/private/")
    assert first.path == os.path.expanduser("~/notes/private") and first.reason == "manual"
    assert ex.add(os.path.expanduser("~/notes/private")) is first  # idempotent
    assert ex.match(os.path.expanduser("~/notes/private/a/b.md")) is first
    assert ex.match(os.path.expanduser("~/notes/privateer.md")) is None
    assert os.path.expanduser("~/notes/private") in ex and len(ex) == 1
    assert ex.remove("~/notes/private") and not ex.remove("~/notes/private")
    assert ex.list() == []


@pytest.mark.parametrize("path", ["~\x00", "~a\x00b/notes", "~/notes\x00", "/tmp/\x00"])
def test_a_path_with_a_nul_matches_no_exclusion_and_does_not_raise(path: str) -> None:
    # found by test_the_filter_never_raises: expanduser("~\x00") raised ValueError
    ex = RuntimeExclusions()
    ex.add("~/notes")
    ex.add("/tmp/private")
    assert ex.match(path) is None
    assert path not in ex


# --- never raises ---------------------------------------------------------------------------------

text = st.text(st.characters(codec="utf-8"), max_size=400) | st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "[####] 5%",
        "a" * 5000,
        "\n" * 50,
        "é" * 100,
        "\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace"),
    ]
)
paths = st.none() | st.text(max_size=60) | st.sampled_from(["/", "", "relative/x", "/a/../b"])
scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
metadata = st.dictionaries(
    st.text(max_size=10), scalars | st.lists(scalars, max_size=3), max_size=5
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    watcher=st.sampled_from(["terminal", "filesystem", "git", "clipboard", "x"]),
    kind=st.text(max_size=12),
    content=text,
    path=paths,
    cwd=paths,
    project=st.none() | st.text(max_size=12),
    metadata_only=st.booleans(),
    meta=metadata,
)
def test_the_filter_never_raises(
    watcher: str,
    kind: str,
    content: str,
    path: str | None,
    cwd: str | None,
    project: str | None,
    metadata_only: bool,
    meta: dict[str, Any],
) -> None:
    f = FILTER_UNDER_FUZZ
    event = WatcherEvent(
        watcher=watcher,
        kind=kind,
        content=content,
        path=path,
        cwd=cwd,
        project=project,
        metadata_only=metadata_only,
        metadata=meta,
    )
    decision = f.check(event)  # decide() adds only the gate, covered above
    assert isinstance(decision, Accept | Drop)
    if isinstance(decision, Accept):
        assert 0.0 <= decision.score <= 1.0


FILTER_UNDER_FUZZ = HeuristicFilter(
    FilterConfig(auto_exclude_per_hour=2, auto_exclude_watchers=["filesystem", "x"]),
    clock=Ticker(),
    home=HOME,
)


# --- project resolution ------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """home/ann/{code/webapp (git, with docs/), code/webapp/libs/vendored (git), notes}."""
    home = tmp_path / "home" / "ann"
    for folder in (
        "code/webapp/.git",
        "code/webapp/src/deep",
        "code/webapp/libs/vendored/.git",
        "code/webapp/docs",
        "notes/2024",
        "code/alpha-fork/.git",
        "code/tools/.git",
        "code/tools/plugins/ext/.git",
    ):
        (home / folder).mkdir(parents=True)
    (home / "code" / "wt").mkdir()
    (home / "code" / "wt" / ".git").write_text("gitdir: /elsewhere\n")  # a worktree's file
    return home


PROJECT_CASES = [
    # (name, path, cwd, watcher project, expected)
    ("configured path", "code/webapp/src/a.py", None, None, "shop"),
    ("longest configured path wins", "code/webapp/docs/x.md", None, None, "shop-docs"),
    ("configured beats the watcher's name", None, "code/webapp", "webapp", "shop"),
    ("watcher's name through aliases", None, None, "alpha-fork", "alpha"),
    ("watcher's name as it is", None, None, "other", "other"),
    ("configured beats a nested repo", "code/webapp/libs/vendored/x.c", None, None, "shop"),
    ("nested git root", "code/tools/plugins/ext/x.c", None, None, "ext"),
    ("outer git root", "code/tools/plugins/x.c", None, None, "tools"),
    ("git root alias", "code/alpha-fork/a.txt", None, None, "alpha"),
    ("a .git file counts", "code/wt/x.py", None, None, "wt"),
    ("folder name without git", "notes/2024/jan.md", None, None, "2024"),
    ("cwd is the folder itself", None, "notes", None, "notes"),
    ("home is no project", None, ".", None, None),
    ("a file in home is no project", "todo.txt", None, None, None),
    ("nothing known", None, None, None, None),
]


@pytest.mark.parametrize(
    ("path", "cwd", "project", "expected"),
    [c[1:] for c in PROJECT_CASES],
    ids=[c[0] for c in PROJECT_CASES],
)
def test_project_resolution(
    tree: Path, path: str | None, cwd: str | None, project: str | None, expected: str | None
) -> None:
    resolver = ProjectResolver(
        [
            ProjectSpec(name="shop", paths=[str(tree / "code" / "webapp")]),
            ProjectSpec(name="shop-docs", paths=[str(tree / "code" / "webapp" / "docs")]),
            ProjectSpec(name="alpha", aliases=["Alpha-Fork"]),
        ],
        home=str(tree),
    )
    resolved = resolver.resolve(
        path=str(tree / path) if path else None,
        cwd=str(tree / cwd) if cwd else None,
        project=project,
    )
    assert resolved == expected


def test_configured_paths_accept_tilde(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    resolver = ProjectResolver([ProjectSpec(name="n", paths=["~/notes"])], home=str(tmp_path))
    assert resolver.resolve(path=str(tmp_path / "notes" / "a.md")) == "n"


def test_git_root_lookups_are_cached(tree: Path) -> None:
    calls: Counter[str] = Counter()

    def has_git(folder: str) -> bool:
        calls[folder] += 1
        return os.path.lexists(os.path.join(folder, ".git"))

    resolver = ProjectResolver(home=str(tree), has_git=has_git)
    deep = tree / "code" / "webapp" / "src" / "deep"
    for _ in range(100):
        assert resolver.resolve(path=str(deep / "x.py")) == "webapp"
    assert resolver.resolve(path=str(tree / "code" / "webapp" / "src" / "y.py")) == "webapp"
    assert max(calls.values()) == 1  # every folder asked once


def test_a_dotfiles_home_is_not_every_files_repository(tree: Path) -> None:
    (tree / ".git").mkdir()
    resolver = ProjectResolver(home=str(tree))
    assert resolver.resolve(path=str(tree / "notes" / "2024" / "a.md")) == "2024"


# --- a realistic mixed stream --------------------------------------------------------------------


def test_mixed_stream_drop_rate() -> None:
    """Commands from the benign corpus (one every 5 s) interleaved with saves of this
    repository's own source files and a little machine noise."""
    ticker = Ticker()
    f = HeuristicFilter(FilterConfig(), clock=ticker, home=HOME)
    sources = [
        p for p in sorted((ROOT / "mnemonic").rglob("*.py")) if len(p.read_text("utf-8")) > 200
    ][:200]
    noise = [
        # a log's tail (logs are judged, not denied: a dull line is below log_appended's 0.6)
        WatcherEvent(
            watcher="filesystem", kind="log_appended", content="compiling...", path="/w/b.log"
        ),
        edit("/work/app/dist/app.min.js", "!function(e){" + "var a=1;" * 300 + "}"),
        cmd("[=================>      ] 72% 1.2MB/s"),
        cmd("npm WARN deprecated request@2.88.2: request has been deprecated"),
    ]
    by_kind: dict[str, Counter[str]] = {"command": Counter(), "file": Counter(), "noise": Counter()}
    for i, line in enumerate(BENIGN):
        ticker.now += 5.0
        by_kind["command"][reason(f.check(cmd(line)))] += 1
        if i % 30 == 0:
            source = sources[(i // 30) % len(sources)]
            text = source.read_text("utf-8")
            by_kind["file"][reason(f.check(edit(str(source), text)))] += 1
        if i % 500 == 0:
            by_kind["noise"][reason(f.check(noise[(i // 500) % len(noise)]))] += 1
    for name, counts in by_kind.items():
        total = sum(counts.values())
        dropped = total - counts["accept"]
        print(f"{name}: {total} events, {dropped} dropped ({dropped / total:.1%}): {dict(counts)}")
    commands = by_kind["command"]
    command_drop = 1 - commands["accept"] / sum(commands.values())
    assert 0.02 < command_drop < 0.25
    assert by_kind["file"]["accept"] == sum(by_kind["file"].values())  # real code is kept
    assert by_kind["noise"]["accept"] == 0
