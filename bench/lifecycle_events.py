"""A seeded generator of simulated developer-workflow observations for ``lifecycle.py``.

Three projects (a Python service, a Rust CLI, a TypeScript frontend). Each working day has
a few bursts of work (sessions of 10-60 observations a few minutes apart, in one project)
separated by quiet hours, so the episoder has something to group; weekends are quiet (an
occasional command). An observation is one of:

* a shell command (``terminal``; a failed one carries its exit status, as the shell watcher
  writes it), a file edit (``filesystem``, the watcher's change text with ``metadata.path``),
  a git commit (``git``, the watcher's commit text with ``metadata.event.files``);
* a decision, an error and (minutes later) its fix, a learning, a handoff at the end of a
  session (``mcp``, as an agent would write them);
* a restatement of an earlier learning or of a current fact, days later and worded a
  little differently (near-duplicates for merging);
* an update of a mutable fact ("moved sessions from MySQL to Redis", a version bump, an
  owner change, a schedule change), which should supersede the older statement.

Each day also carries a few recall probes: a question a developer would ask, the words a
helpful answer contains (the *current* value of a fact) and the words of a stale one, so
the simulated user in ``lifecycle.py`` can rate results.

Everything comes from one ``random.Random(seed)``: the same seed gives the same 90 days.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

HOME = "/home/dev/src"


@dataclass(frozen=True, slots=True)
class Observation:
    """One memory to post (``kind`` is the generator's own label, kept in metadata)."""

    content: str
    source: str
    project: str
    timestamp: datetime
    kind: str
    type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The memory as ``POST /api/v1/memories/batch`` takes it."""
        out: dict[str, Any] = {
            "content": self.content,
            "source": self.source,
            "project": self.project,
            "timestamp": self.timestamp.isoformat(),
            "metadata": {**self.metadata, "sim_kind": self.kind},
        }
        if self.type is not None:
            out["type"] = self.type
        return out


@dataclass(frozen=True, slots=True)
class Probe:
    """A recall question with what a helpful and a stale answer contain (lowercase)."""

    query: str
    project: str
    expect: tuple[str, ...]
    stale: tuple[str, ...] = ()
    updated: bool = False  # the fact it asks about has changed at least once


@dataclass(frozen=True, slots=True)
class Day:
    index: int
    start: datetime  # midnight UTC of the simulated day
    weekend: bool
    observations: list[Observation]
    probes: list[Probe]


@dataclass(frozen=True, slots=True)
class Project:
    name: str
    files: tuple[str, ...]
    commands: tuple[str, ...]  # "{f}" is a file, "{t}" a test name
    tests: tuple[str, ...]
    errors: tuple[tuple[str, str], ...]  # (error text, fix text); "{f}" is a file
    learnings: tuple[tuple[str, ...], ...]  # paraphrases of one lesson
    decisions: tuple[str, ...]
    authors: tuple[str, ...]

    @property
    def root(self) -> str:
        return f"{HOME}/{self.name}"


@dataclass(frozen=True, slots=True)
class Fact:
    """A mutable fact: its values over time and how each is stated."""

    project: str
    values: tuple[str, ...]
    initial: str  # "{v}"
    restate: tuple[str, ...]  # "{v}"
    update: tuple[str, ...]  # "{old}", "{new}"
    query: str


PROJECTS = (
    Project(
        name="atlas",
        files=(
            "src/atlas/api/routes.py",
            "src/atlas/api/schemas.py",
            "src/atlas/db/session.py",
            "src/atlas/db/models.py",
            "src/atlas/auth/tokens.py",
            "src/atlas/auth/middleware.py",
            "src/atlas/billing/invoices.py",
            "src/atlas/billing/stripe_client.py",
            "src/atlas/workers/email.py",
            "tests/test_routes.py",
            "tests/test_tokens.py",
            "tests/test_invoices.py",
            "pyproject.toml",
            "docker-compose.yml",
            "alembic/env.py",
        ),
        commands=(
            "pytest {t} -x -q",
            "pytest tests -k {k} -q",
            "ruff check src/atlas",
            "mypy src/atlas",
            "alembic upgrade head",
            "alembic revision --autogenerate -m 'add {k} column'",
            "docker compose up -d db cache",
            "uv pip install -e '.[dev]'",
            "python -m atlas.workers.email --dry-run",
            "git push origin feature/{k}",
            "git rebase -i origin/main",
            "curl -s localhost:8000/health",
            "vim {f}",
            "rg '{k}' src/atlas",
        ),
        tests=("tests/test_routes.py", "tests/test_tokens.py", "tests/test_invoices.py"),
        errors=(
            (
                "pytest tests/test_tokens.py failed: AssertionError: expected 401, got 500 in "
                "test_expired_token (TypeError: can't compare offset-naive and offset-aware "
                "datetimes)",
                "Fixed test_expired_token: src/atlas/auth/tokens.py compared naive and aware "
                "datetimes; it uses timezone-aware UTC everywhere.",
            ),
            (
                "alembic upgrade head failed: sqlalchemy.exc.OperationalError: duplicate "
                "column name: invoice_number",
                "Fixed the alembic migration: the invoice_number column was created twice; "
                "dropped the duplicate op.add_column from the revision.",
            ),
            (
                "atlas API returns 502 on /invoices: stripe_client raised ReadTimeout after 5s",
                "Fixed /invoices 502: stripe_client retries ReadTimeout twice with backoff "
                "and the gateway timeout is 15s.",
            ),
            (
                "email worker crashed: KeyError 'template_id' in src/atlas/workers/email.py",
                "Fixed the email worker KeyError: templates without template_id fall back "
                "to the default template.",
            ),
        ),
        learnings=(
            (
                "The atlas integration tests need REDIS_URL set, otherwise they hang on connect.",
                "atlas integration tests hang on connect unless REDIS_URL is set.",
                "Reminder: set REDIS_URL before running the atlas integration tests or "
                "they hang on connect.",
            ),
            (
                "TIL: alembic autogenerate misses server_default changes; write those "
                "migrations by hand.",
                "alembic autogenerate does not detect server_default changes, so write "
                "those migrations by hand.",
            ),
            (
                "Stripe webhooks must be verified with the raw request body, not the parsed JSON.",
                "Note: verify Stripe webhooks against the raw request body, never the parsed JSON.",
            ),
            (
                "pytest-xdist breaks the atlas db fixtures; run test_invoices.py without -n.",
                "Don't run test_invoices.py with pytest-xdist -n: the atlas db fixtures break.",
            ),
        ),
        decisions=(
            "Decision: atlas invoices are numbered per customer, not globally, because "
            "accounting asked for per-customer sequences.",
            "Decided to keep the atlas REST API versioned under /v1 and add /v2 only for "
            "breaking changes.",
            "Decision: atlas background jobs retry at most 3 times, then go to the dead "
            "letter queue.",
            "We decided to store money as integer cents in atlas, never floats.",
        ),
        authors=("Dana", "Eli"),
    ),
    Project(
        name="beacon",
        files=(
            "src/main.rs",
            "src/config.rs",
            "src/net/client.rs",
            "src/net/retry.rs",
            "src/cli/args.rs",
            "src/output/table.rs",
            "tests/cli.rs",
            "Cargo.toml",
            "README.md",
            ".github/workflows/release.yml",
        ),
        commands=(
            "cargo build --release",
            "cargo test {k}",
            "cargo clippy --all-targets -- -D warnings",
            "cargo fmt --check",
            "cargo run -- status --json",
            "cargo run -- fetch --retries 3 {k}",
            "cargo bench net_{k}",
            "git tag v0.{n}.0",
            "vim {f}",
            "rg '{k}' src",
        ),
        tests=("tests/cli.rs",),
        errors=(
            (
                "cargo build failed: error[E0502]: cannot borrow `self.pool` as mutable "
                "because it is also borrowed as immutable in src/net/client.rs",
                "Fixed E0502 in src/net/client.rs: clone the Arc of the pool before the "
                "await instead of holding the borrow.",
            ),
            (
                "beacon fetch panicked: called `Option::unwrap()` on a `None` value at "
                "src/config.rs:88",
                "Fixed the beacon panic in src/config.rs: a missing [proxy] section is "
                "treated as no proxy.",
            ),
            (
                "cargo test cli_json_output failed: table columns misaligned with wide "
                "unicode names",
                "Fixed cli_json_output: src/output/table.rs measures display width with "
                "unicode-width.",
            ),
        ),
        learnings=(
            (
                "beacon: reqwest needs the rustls-tls feature for the static musl build.",
                "The static musl build of beacon only works with reqwest's rustls-tls feature.",
            ),
            (
                "cargo clippy -D warnings in CI fails on new lints after a toolchain bump; "
                "pin the toolchain in rust-toolchain.toml.",
                "Pin the toolchain in rust-toolchain.toml: a toolchain bump adds clippy "
                "lints that fail CI with -D warnings.",
            ),
            (
                "beacon retries must use jittered backoff or the fleet hammers the server in sync.",
                "Remember: jittered backoff for beacon retries, otherwise every client "
                "retries in sync.",
            ),
        ),
        decisions=(
            "Decision: beacon prints JSON only with --json; the default stays a table.",
            "Decided beacon config lives in ~/.config/beacon/config.toml, no env-only config.",
            "Decision: beacon supports the last two stable Rust releases only.",
        ),
        authors=("Eli", "Farah"),
    ),
    Project(
        name="cobalt",
        files=(
            "src/components/Header.tsx",
            "src/components/InvoiceTable.tsx",
            "src/api/client.ts",
            "src/hooks/useSession.ts",
            "src/pages/Settings.tsx",
            "src/styles/theme.css",
            "package.json",
            "vite.config.ts",
            "tests/InvoiceTable.test.tsx",
        ),
        commands=(
            "npm run build",
            "npm test -- {k}",
            "npx eslint src --fix",
            "npx tsc --noEmit",
            "npm run dev",
            "npx playwright test {k}",
            "npm install {k}",
            "vim {f}",
            "rg '{k}' src",
        ),
        tests=("tests/InvoiceTable.test.tsx",),
        errors=(
            (
                "npm run build failed: TS2339: Property 'totalCents' does not exist on type "
                "'Invoice' in src/components/InvoiceTable.tsx",
                "Fixed TS2339: regenerated the Invoice type from the atlas OpenAPI schema so "
                "it has totalCents.",
            ),
            (
                "playwright settings test flaky: Timeout 5000ms exceeded waiting for "
                "getByRole('button', name='Save')",
                "Fixed the flaky settings test: wait for the /api/settings response before "
                "clicking Save.",
            ),
        ),
        learnings=(
            (
                "useSession must not be called inside a conditional: React hook order "
                "breaks the header.",
                "Never call useSession conditionally; the hook order breaks the Header.",
            ),
            (
                "vite dev proxy needs changeOrigin true for the atlas API cookies.",
                "The vite dev proxy only passes the atlas API cookies with changeOrigin true.",
            ),
        ),
        decisions=(
            "Decision: cobalt fetches with TanStack Query; no hand-written caching in components.",
            "Decided cobalt formats money only through formatCents() so rounding is in one place.",
        ),
        authors=("Farah", "Dana"),
    ),
)

FACTS = (
    Fact(
        project="atlas",
        values=("MySQL", "Redis", "Valkey"),
        initial="Decision: atlas stores user sessions in {v}.",
        restate=("atlas user sessions are stored in {v}.", "Sessions for atlas live in {v}."),
        update=(
            "Moved atlas user sessions from {old} to {new}.",
            "atlas user sessions now live in {new} instead of {old}.",
        ),
        query="where does atlas store user sessions",
    ),
    Fact(
        project="atlas",
        values=("0.110.0", "0.111.1", "0.112.2", "0.115.0"),
        initial="atlas pins fastapi {v} in pyproject.toml.",
        restate=("atlas is on fastapi {v}.", "pyproject.toml of atlas pins fastapi {v}."),
        update=(
            "Bumped fastapi from {old} to {new} in the atlas pyproject.toml.",
            "atlas now pins fastapi {new} instead of {old}.",
        ),
        query="which fastapi version does atlas pin",
    ),
    Fact(
        project="atlas",
        values=("Alice", "Bob", "Chen"),
        initial="{v} owns the atlas billing module and reviews its pull requests.",
        restate=("The atlas billing module is owned by {v}.", "Ask {v} about atlas billing."),
        update=(
            "{new} now owns the atlas billing module instead of {old}.",
            "Ownership of the atlas billing module moved from {old} to {new}.",
        ),
        query="who owns the atlas billing module",
    ),
    Fact(
        project="atlas",
        values=("Jenkins", "GitHub Actions"),
        initial="atlas CI runs on {v}.",
        restate=("The atlas CI pipeline is on {v}.",),
        update=("Switched atlas CI from {old} to {new}.",),
        query="what runs atlas CI",
    ),
    Fact(
        project="beacon",
        values=("every second Tuesday", "every Thursday", "every Monday"),
        initial="beacon releases are cut {v}.",
        restate=("We cut beacon releases {v}.",),
        update=("beacon releases are now cut {new} instead of {old}.",),
        query="when are beacon releases cut",
    ),
    Fact(
        project="beacon",
        values=("30s", "10s", "20s"),
        initial="beacon's default request timeout is {v}.",
        restate=("The default beacon request timeout is {v}.",),
        update=("Changed beacon's default request timeout from {old} to {new}.",),
        query="what is the beacon default request timeout",
    ),
    Fact(
        project="beacon",
        values=("1.36", "1.38", "1.40"),
        initial="beacon depends on tokio {v}.",
        restate=("beacon uses tokio {v}.",),
        update=("Upgraded tokio from {old} to {new} in beacon's Cargo.toml.",),
        query="which tokio version does beacon use",
    ),
    Fact(
        project="cobalt",
        values=("Netlify", "Cloudflare Pages"),
        initial="cobalt deploys to {v} from the main branch.",
        restate=("The cobalt frontend is deployed on {v}.",),
        update=("Moved cobalt deploys from {old} to {new}.",),
        query="where is cobalt deployed",
    ),
    Fact(
        project="cobalt",
        values=("Node 18", "Node 20", "Node 22"),
        initial="cobalt builds on {v}.",
        restate=("cobalt's CI uses {v}.",),
        update=("Upgraded the cobalt build from {old} to {new}.",),
        query="which node version does cobalt build on",
    ),
)

_KEYWORDS = (
    "tokens", "invoice", "session", "retry", "timeout", "header", "billing", "cache",
    "config", "proxy", "webhook", "email", "theme", "settings", "json", "auth",
)  # fmt: skip

_SNIPPETS = (
    "return self._retry(request, attempts=3)",
    "if token.expires_at < now_utc():",
    "total_cents = sum(line.amount_cents for line in lines)",
    "let timeout = Duration::from_secs(cfg.timeout_s);",
    "const { data } = useQuery(['invoices', id], fetchInvoice)",
    "logger.info('sent %s', message_id)",
    "session = store.get(session_id)",
    "pub fn with_proxy(mut self, url: Url) -> Self {",
    "@router.get('/invoices/{invoice_id}')",
    "expect(screen.getByText('Saved')).toBeVisible()",
)


def _weekend(day: datetime) -> bool:
    return day.weekday() >= 5


class Generator:
    """The simulated developer: call :meth:`day` for 0, 1, 2, ... in order."""

    def __init__(self, seed: int, days: int, per_day: int, now: datetime) -> None:
        self.rng = random.Random(seed)
        self.days = days
        self.per_day = per_day
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        self.first = midnight - timedelta(days=days)  # day `days - 1` is yesterday
        self.projects = {p.name: p for p in PROJECTS}
        # the value index of every fact and the days its changes happen
        self.current = {i: 0 for i in range(len(FACTS))}
        self.stated: set[int] = set()  # facts whose initial value was written down
        self.changes: dict[int, list[int]] = {}
        for i, fact in enumerate(FACTS):
            n = len(fact.values) - 1
            lo = min(8, max(1, days // 4))
            pool = list(range(lo, days)) or [days - 1]
            picks = sorted(self.rng.sample(pool, min(n, len(pool))))
            for d in picks:
                self.changes.setdefault(d, []).append(i)
        self.learned: list[tuple[str, int]] = []  # (project, learning index) said so far
        self.decided: set[str] = set()

    # -- one day ---------------------------------------------------------------------------

    def day(self, index: int) -> Day:
        start = self.first + timedelta(days=index)
        weekend = _weekend(start)
        rng = self.rng
        obs: list[Observation] = []
        if weekend:
            if rng.random() < 0.4:  # a short look at something on a Saturday
                t = start + timedelta(hours=rng.uniform(10, 18))
                obs.extend(self._session(rng.choice(PROJECTS), t, rng.randint(3, 10)))
        else:
            target = max(1, round(self.per_day * rng.uniform(0.75, 1.25)))
            sessions = rng.randint(3, 6)
            sizes = _split(rng, target, sessions)
            t = start + timedelta(hours=rng.uniform(8.5, 10))
            for size in sizes:
                project = rng.choices(PROJECTS, weights=(5, 3, 2))[0]
                burst = self._session(project, t, size)
                obs.extend(burst)
                t = (burst[-1].timestamp if burst else t) + timedelta(minutes=rng.uniform(30, 150))
        obs.extend(self._updates(index, start, obs))
        if index == 0 or (not weekend and len(self.stated) < len(FACTS)):
            obs.extend(self._initial_facts(start, weekend))
        obs.sort(key=lambda o: o.timestamp)
        return Day(index, start, weekend, obs, self._probes(weekend))

    def _session(self, project: Project, t: datetime, size: int) -> list[Observation]:
        rng = self.rng
        out: list[Observation] = []
        while len(out) < size:
            t += timedelta(seconds=rng.uniform(20, 300))
            kind = rng.choices(
                ("shell", "edit", "commit", "decision", "error", "learning", "restate"),
                weights=(38, 28, 8, 3, 5, 5, 8),
            )[0]
            out.extend(getattr(self, f"_{kind}")(project, t))
        if size >= 8:
            t += timedelta(seconds=rng.uniform(30, 240))
            out.append(self._handoff(project, t, out))
        return out

    # -- observation kinds -----------------------------------------------------------------

    def _shell(self, p: Project, t: datetime) -> list[Observation]:
        rng = self.rng
        cmd = rng.choice(p.commands).format(
            f=rng.choice(p.files),
            t=rng.choice(p.tests),
            k=rng.choice(_KEYWORDS),
            n=rng.randint(1, 30),
        )
        status = 0 if rng.random() < 0.85 else rng.choice((1, 2, 101, 130))
        content = cmd
        if status:
            outcome = "interrupted" if status == 130 else "failed"
            content = f"{cmd}\n(exit status {status}: {outcome})"
        meta = {
            "watcher": "terminal",
            "kind": "command",
            "cwd": p.root,
            "event": {"shell": "zsh", "exit_status": status},
        }
        return [Observation(content, "terminal", p.name, t, "shell", metadata=meta)]

    def _edit(self, p: Project, t: datetime) -> list[Observation]:
        rng = self.rng
        rel = rng.choice(p.files)
        added, removed = rng.randint(1, 40), rng.randint(0, 25)
        lines = rng.sample(_SNIPPETS, 2)
        content = (
            f"{p.name}/{rel} changed (+{added} -{removed} lines) near line "
            f"{rng.randint(1, 400)}:\n+ {lines[0]}\n- {lines[1]}"
        )
        meta = {
            "watcher": "filesystem",
            "kind": "file_modified",
            "path": f"{p.root}/{rel}",
            "event": {"root": p.root, "size": rng.randint(200, 40000)},
        }
        return [Observation(content, "filesystem", p.name, t, "edit", metadata=meta)]

    def _commit(self, p: Project, t: datetime) -> list[Observation]:
        rng = self.rng
        files = rng.sample(p.files, rng.randint(1, 3))
        sha = f"{rng.getrandbits(28):07x}"
        verb = rng.choice(("Fix", "Add", "Refactor", "Update", "Test"))
        subject = f"{verb} {rng.choice(_KEYWORDS)} handling in {files[0].rsplit('/', 1)[-1]}"
        content = (
            f"commit {sha} on main in {p.name} by {rng.choice(p.authors)}: {subject} "
            f"({len(files)} file{'s' if len(files) > 1 else ''} changed, "
            f"+{rng.randint(1, 120)} -{rng.randint(0, 60)}): {', '.join(files)}"
        )
        meta = {
            "watcher": "git",
            "kind": "commit",
            "path": p.root,
            "cwd": p.root,
            "event": {"repo": p.root, "sha": sha, "files": files},
        }
        return [Observation(content, "git", p.name, t, "commit", metadata=meta)]

    def _decision(self, p: Project, t: datetime) -> list[Observation]:
        """A decision is taken once; later ones are restated (near-duplicates) instead."""
        fresh = [d for d in p.decisions if d not in self.decided]
        if not fresh:
            return self._restate(p, t)
        text = self.rng.choice(fresh)
        self.decided.add(text)
        return [Observation(text, "mcp", p.name, t, "decision", type="decision")]

    def _error(self, p: Project, t: datetime) -> list[Observation]:
        rng = self.rng
        i = rng.randrange(len(p.errors))
        error, fix = p.errors[i]
        out = [Observation(error, "mcp", p.name, t, "error", type="error")]
        if rng.random() < 0.8:  # fixed within the session
            later = t + timedelta(seconds=rng.uniform(120, 900))
            out.append(Observation(fix, "mcp", p.name, later, "fix"))
        return out

    def _learning(self, p: Project, t: datetime) -> list[Observation]:
        rng = self.rng
        i = rng.randrange(len(p.learnings))
        self.learned.append((p.name, i))
        text = p.learnings[i][0]
        return [Observation(text, "mcp", p.name, t, "learning", type="learning")]

    def _restate(self, p: Project, t: datetime) -> list[Observation]:
        """A near-duplicate: an earlier learning or a current fact, worded a bit differently."""
        rng = self.rng
        mine = [i for name, i in self.learned if name == p.name]
        facts = [i for i in self.stated if FACTS[i].project == p.name]
        if facts and (not mine or rng.random() < 0.4):
            i = rng.choice(facts)
            fact = FACTS[i]
            text = rng.choice(fact.restate).format(v=fact.values[self.current[i]])
            meta = {"sim_fact": i, "sim_value": self.current[i]}
            return [Observation(text, "mcp", p.name, t, "restate_fact", metadata=meta)]
        if not mine:
            return self._shell(p, t)
        variants = p.learnings[rng.choice(mine)]
        text = rng.choice(variants)
        if rng.random() < 0.3:  # restated almost verbatim
            text = text.rstrip(".") + (" (again)." if rng.random() < 0.5 else ".")
        return [Observation(text, "mcp", p.name, t, "restate_learning")]

    def _handoff(self, p: Project, t: datetime, session: list[Observation]) -> Observation:
        rng = self.rng
        touched = list(dict.fromkeys(o.metadata["path"] for o in session if o.kind == "edit"))[:3]
        where = ", ".join(f.rsplit("/", 1)[-1] for f in touched) or "the test suite"
        todo = rng.choice(
            (
                "finish the retry tests",
                "review the open pull request",
                "rerun the flaky tests",
                "update the changelog",
                "check the staging deploy",
            )
        )
        text = f"Handoff for {p.name}: worked on {where}; next: {todo}."
        return Observation(text, "mcp", p.name, t, "handoff", type="handoff")

    # -- facts -----------------------------------------------------------------------------

    def _initial_facts(self, start: datetime, weekend: bool) -> list[Observation]:
        out = []
        todo = [i for i in range(len(FACTS)) if i not in self.stated]
        for i in todo[: 3 if not weekend else 1]:
            fact = FACTS[i]
            t = start + timedelta(hours=self.rng.uniform(9, 17))
            text = fact.initial.format(v=fact.values[0])
            meta = {"sim_fact": i, "sim_value": 0}
            out.append(
                Observation(text, "mcp", fact.project, t, "fact", type="decision", metadata=meta)
            )
            self.stated.add(i)
        return out

    def _updates(self, index: int, start: datetime, obs: list[Observation]) -> list[Observation]:
        out = []
        for i in self.changes.get(index, []):
            if i not in self.stated:
                continue
            fact = FACTS[i]
            old = fact.values[self.current[i]]
            self.current[i] += 1
            new = fact.values[self.current[i]]
            same = [o.timestamp for o in obs if o.project == fact.project]
            t = self.rng.choice(same) if same else start + timedelta(hours=14)
            text = self.rng.choice(fact.update).format(old=old, new=new)
            meta = {"sim_fact": i, "sim_value": self.current[i]}
            when = t + timedelta(seconds=7)
            out.append(
                Observation(text, "mcp", fact.project, when, "update", "decision", metadata=meta)
            )
        return out

    def _probes(self, weekend: bool) -> list[Probe]:
        """A few questions a developer asks on this day (none on a quiet weekend)."""
        rng = self.rng
        if weekend:
            return []
        out: list[Probe] = []
        for i in rng.sample(sorted(self.stated), min(3, len(self.stated))):
            fact = FACTS[i]
            now = fact.values[self.current[i]]
            old = fact.values[self.current[i] - 1] if self.current[i] else None
            out.append(
                Probe(
                    fact.query,
                    fact.project,
                    expect=(now.lower(),),
                    stale=(old.lower(),) if old else (),
                    updated=self.current[i] > 0,
                )
            )
        for name, i in rng.sample(self.learned, min(2, len(self.learned))):
            text = self.projects[name].learnings[i][0]
            words = [w.strip(".,:;'`").lower() for w in text.split()]
            key = max(words, key=len)
            query = " ".join(w for w in words if len(w) > 3)[:80]
            out.append(Probe(f"how to handle: {query}", name, expect=(key,)))
        return out


def _split(rng: random.Random, total: int, parts: int) -> list[int]:
    """``total`` observations in ``parts`` sessions of uneven size (each at least 1)."""
    weights = [rng.uniform(0.5, 1.5) for _ in range(parts)]
    scale = total / sum(weights)
    sizes = [max(1, round(w * scale)) for w in weights]
    sizes[-1] = max(1, sizes[-1] + total - sum(sizes))
    return sizes
