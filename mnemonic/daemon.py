"""The composition root: the only module that reads configuration and wires the store,
the embedder, the encoder, recall, the application layer and the HTTP face together, and
the owner of every background task."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.routing import WebSocketRoute

from mnemonic import __version__
from mnemonic.agents.abstraction import AbstractionAgent
from mnemonic.agents.consolidation import ConsolidationAgent
from mnemonic.agents.dreaming import DreamingAgent
from mnemonic.agents.encoding import EncodingAgent
from mnemonic.agents.enrichment import EnrichmentAgent
from mnemonic.agents.episoding import EpisodingAgent
from mnemonic.agents.metacognition import MetacognitionAgent, recaller_probe, thresholds
from mnemonic.agents.perception import Perceived, PerceptionAgent, WatcherAgent, redacting
from mnemonic.agents.supersession_review import SupersessionReview, candidates
from mnemonic.api.abstraction_routes import build_abstraction_routes
from mnemonic.api.agent_routes import build_agent_routes
from mnemonic.api.app import build_app
from mnemonic.api.browse_routes import build_browse_routes
from mnemonic.api.consolidation_routes import build_consolidation_routes
from mnemonic.api.dashboard_routes import build_dashboard_routes
from mnemonic.api.enrichment_routes import build_enrichment_routes
from mnemonic.api.episode_routes import build_episode_routes
from mnemonic.api.exclusion_routes import build_exclusion_routes
from mnemonic.api.insight_routes import build_insight_routes
from mnemonic.api.link_routes import build_link_routes
from mnemonic.api.llm_routes import build_llm_routes
from mnemonic.api.meta_routes import build_meta_routes
from mnemonic.api.metrics import Metrics, MetricsSnapshot, fold_serials
from mnemonic.api.purge_routes import build_purge_routes
from mnemonic.api.reactor_routes import build_reactor_routes
from mnemonic.api.session import WebAuth
from mnemonic.api.settings_routes import TokenRotator, build_settings_routes
from mnemonic.api.supersession_routes import build_supersession_routes
from mnemonic.api.tool_usage_routes import build_tool_usage_routes
from mnemonic.api.ws import EventStream
from mnemonic.api_token import TOKEN_ENV, load_or_create_token
from mnemonic.app.activity import ActivityLog
from mnemonic.app.aggregates import Aggregates
from mnemonic.app.browse import BrowseService
from mnemonic.app.exclusions import ExclusionService
from mnemonic.app.files import FileMemories, FileVersion
from mnemonic.app.links import LinkService
from mnemonic.app.patterns import PatternRefresher, RefreshAfterCycle
from mnemonic.app.purge import PurgeService, recall_seqs
from mnemonic.app.reembed import ReembedProgress, reembed
from mnemonic.app.service import MemoryService, RememberInput
from mnemonic.app.supersession import SupersessionService
from mnemonic.config import Config, EmbeddingConfig, render_template_yaml
from mnemonic.cron import next_fire
from mnemonic.encoding.passages import row_models
from mnemonic.errors import StorageUnavailable
from mnemonic.events.bus import EventBus
from mnemonic.index.checkpoints import Checkpointer
from mnemonic.index.recall_index import RecallIndex
from mnemonic.llm.completion.build import build_completer
from mnemonic.llm.embedding import EmbeddingProvider
from mnemonic.mcp.mount import McpMount
from mnemonic.paths import Paths
from mnemonic.perception import HeuristicFilter, ProjectResolver, RuntimeExclusions
from mnemonic.private_files import restrict, write_private_text
from mnemonic.reactor.rules import RuleError, check_agents, parse_rules
from mnemonic.reactor.runner import ReactorRunner
from mnemonic.recall.pipeline import Recaller
from mnemonic.redact import redact
from mnemonic.runtime.agent_runs import AgentRegistry, CycleAgent, Schedule, ScheduledAgent
from mnemonic.runtime.clock import SystemClock
from mnemonic.runtime.heap import trim_heap
from mnemonic.runtime.loop_watchdog import LoopWatchdog
from mnemonic.runtime.orchestrator import Orchestrator
from mnemonic.runtime.schedule import PeriodicJob
from mnemonic.runtime.supervisor import Agent, Supervisor
from mnemonic.store.abstractions import SQLiteAbstractions
from mnemonic.store.agent_runs import SQLiteRunLog
from mnemonic.store.browse import SQLiteBrowser
from mnemonic.store.consolidation import SQLiteConsolidation
from mnemonic.store.dashboard import SQLiteDashboard
from mnemonic.store.database import Database
from mnemonic.store.dreaming import SQLiteDreaming
from mnemonic.store.enrichment import SQLiteEnrichment
from mnemonic.store.episodes import SQLiteEpisodes
from mnemonic.store.exclusions import SQLiteExclusions
from mnemonic.store.files import SQLiteFiles
from mnemonic.store.llm_usage import SQLiteLlmUsage
from mnemonic.store.meta import SQLiteMeta, database_bytes
from mnemonic.store.purge import SQLitePurger
from mnemonic.store.reactor import SQLiteReactorFires
from mnemonic.store.recovery import mark_clean
from mnemonic.store.repair import repair_non_finite_metadata
from mnemonic.store.sqlite import SQLiteStore
from mnemonic.store.supersessions import SQLiteSupersessions
from mnemonic.store.tool_usage import SQLiteToolUsage
from mnemonic.timeutil import utcnow
from mnemonic.watchers.base import Watcher

log = logging.getLogger(__name__)


def build_embedder(cfg: EmbeddingConfig) -> EmbeddingProvider:
    """The configured provider; the embedded ONNX model unless told otherwise."""
    if cfg.provider == "openai":
        from mnemonic.llm.embedding.openai_compat import OpenAICompatibleEmbedder

        embedder = OpenAICompatibleEmbedder(
            base_url=cfg.base_url,
            model=cfg.model,
            api_key=os.environ.get(cfg.api_key_env),
            timeout=cfg.timeout_s,
            batch_size=cfg.batch_size,
        )
        embedder.probe()
        return embedder
    from mnemonic.llm.embedding.onnx import OnnxEmbedder

    return OnnxEmbedder(
        threads=cfg.threads,
        max_tokens=cfg.max_tokens,
        batch_size=cfg.batch_size,
        batch_tokens=cfg.batch_tokens,
    )


def limit_blas_threads() -> None:
    """One BLAS thread: the index does matrix-vector products, which gain nothing from
    threads, and a multi-threaded OpenBLAS GEMV waits on a descheduled thread whenever the
    embedder or anything else holds the other core (measured: 0.3 ms -> 12 ms at 3k rows)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def write_default_config(paths: Paths) -> None:
    """Write the commented-out template on first start so users can see every knob
    (setting nothing: defaults stay defaults, see ``render_template_yaml``)."""
    if not paths.config_file.exists():
        paths.config_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_private_text(paths.config_file, render_template_yaml())


def build_watchers(cfg: Config, paths: Paths, clock: SystemClock) -> list[Watcher]:
    """The enabled watchers. Each module is imported only when its watcher is on, so a
    daemon without git or a clipboard never imports GitPython or pyperclip."""
    watchers: list[Watcher] = []
    state_dir = paths.data_dir / "watchers"
    git_watcher = None
    if cfg.git.enabled:
        from mnemonic.watchers.git import GitWatcher

        git_watcher = GitWatcher(cfg.git, clock=clock, state_path=state_dir / "git-state.json")
    if cfg.filesystem.enabled and cfg.filesystem.roots:
        from mnemonic.watchers.filesystem import FilesystemWatcher

        watchers.append(
            FilesystemWatcher(
                cfg.filesystem,
                clock=clock,
                # the daemon's own folders: watching them would remember its own writes
                exclude=(paths.config_dir, paths.data_dir, paths.log_dir),
                state_path=state_dir / "filesystem-index.json",
                # a .git appearing under a root: the git watcher looks there at once
                on_repository=git_watcher.hint if git_watcher is not None else None,
            )
        )
    if cfg.shell_history.enabled:
        from mnemonic.watchers.shell_history import ShellHistoryWatcher

        watchers.append(
            ShellHistoryWatcher(
                cfg.shell_history,
                state_dir,
                clock=clock,
                hook_file=paths.data_dir / "shell-hook.jsonl",  # `mnemonic shell-hook bash`
            )
        )
    if cfg.clipboard.enabled:
        from mnemonic.watchers.clipboard import ClipboardWatcher

        watchers.append(ClipboardWatcher(cfg.clipboard, clock=clock))
    if git_watcher is not None:
        watchers.append(git_watcher)
    return watchers


class _OneShot:
    """A job that runs once under the supervisor (restarted only if it crashes)."""

    def __init__(self, name: str, job: Callable[[], Awaitable[Any]], detail: Callable[[], Any]):
        self.name = name
        self._job = job
        self._detail = detail

    async def run(self) -> None:
        await self._job()

    def health(self) -> dict[str, Any]:
        return {"progress": self._detail()}


_VECTORS_MODEL = "vectors_model"  # every stored vector is this model's (set by re-embedding)
_PASSAGES = "+passages"  # ... and every memory has its passages (migration 0009)


def _log_failure(what: str) -> Callable[[asyncio.Task[None]], None]:
    """A done-callback that logs a background task's exception as ``what`` failed."""

    def done(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("%s failed", what, exc_info=task.exception())

    return done


_log_index_failure = _log_failure("building the recall index")
_log_repair_failure = _log_failure("embedding damaged vector rows again")


async def _cancel(task: asyncio.Task[None] | None) -> None:
    if task is not None and not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _trim_heap() -> bool:
    """In a worker thread: a trim walks the heap for a few milliseconds."""
    return await asyncio.to_thread(trim_heap)


class Daemon:
    """Builds everything in ``start`` and tears it down in reverse in ``stop``."""

    _index_task: asyncio.Task[None] | None
    _repair_task: asyncio.Task[None] | None  # re-embedding rows a build found damaged

    def __init__(
        self,
        cfg: Config,
        paths: Paths,
        token: str,
        embedder: EmbeddingProvider | None = None,
        notices: Sequence[str] = (),
    ) -> None:
        self.cfg = cfg
        self.paths = paths
        self.token = token
        # the token in force and the dashboard's browser sessions (api/session.py): the
        # guard checks it, token rotation swaps it with ``web_auth.set_token``
        self.web_auth = WebAuth(token)
        self.notices = list(notices)  # degraded-at-start reasons, e.g. a database moved aside
        self.started_at = time.time()
        self.ready = False
        self.reembed_progress = ReembedProgress()
        self.clock = SystemClock()
        self.bus = EventBus()
        self.embedder = embedder or build_embedder(cfg.embedding)
        self.db = Database(paths.database, cfg.storage)
        self.store = SQLiteStore(self.db)
        self.browser = SQLiteBrowser(self.db)
        self.index, self.checkpoints = self._recall_index()
        self.encoder = EncodingAgent(
            self.bus.subscribe,
            self.bus.publish,
            self.store,
            self.store,
            self.index,
            self.embedder,
            cfg.encoding,
            self.clock,
        )
        self.supervisor = Supervisor(
            self.bus.publish,
            self.clock,
            backoff_initial_s=cfg.agents.restart_initial_s,
            backoff_max_s=cfg.agents.restart_max_s,
        )
        self.watchdog = LoopWatchdog(cfg.agents.loop_stall_threshold_s)
        self.activity = ActivityLog(cfg.events.activity_size, cfg.websocket.content_max_chars)
        self.stream = EventStream(self.bus.subscribe, cfg.websocket)
        self.episodes = SQLiteEpisodes(self.db)
        recaller = Recaller(
            self.store,
            self.store,
            self.store,
            self.index,
            self.embedder,
            cfg.recall,
            episodes=self.episodes,
        )
        self.recaller = recaller
        self._index_task = self._repair_task = None
        self.projects = ProjectResolver(cfg.perception.projects)
        self.service = MemoryService(
            cfg=cfg,
            ingest=self.store,
            raws=self.store,
            memories=self.store,
            associations=self.store,
            feedback=self.store,
            recaller=recaller,
            browser=self.browser,
            embedder=self.embedder,
            publish=self.bus.publish,
            redact=lambda text: redact(text).text,
            clock=utcnow,
            canonical_project=self.projects.canonical,
        )
        # counts over every memory: from the recall index's columns once it is ready
        self.aggregates = Aggregates(self.index, self.browser, SQLiteDashboard(self.db))
        self.browse = BrowseService(self.browser, self.store, self.aggregates)
        self.supersessions = SupersessionService(SQLiteSupersessions(self.db), self.bus.publish)
        self.agent_runs = SQLiteRunLog(self.db)
        self.agents = AgentRegistry()  # the thinking half's cycle agents, by name
        self.purges = PurgeService(
            SQLitePurger(self.db),
            self.store,
            recall_seqs(recaller),
            self.bus.publish,
            self.service.drain,
            self.activity.forget,
        )
        self.files = FileMemories(
            self.service,
            SQLiteFiles(self.db),
            self.store,
            self.bus.publish,
            lambda text: redact(text).text,
            utcnow,
        )
        self.llm_usage = SQLiteLlmUsage(self.db)
        self.completer = build_completer(cfg.llm, self.llm_usage)  # NoCompleter: no LLM
        self.supersession_review = SupersessionReview(
            SQLiteSupersessions(self.db), self.completer, cfg.supersession
        )
        self.encoder.supersession = cfg.supersession.enabled
        self.encoder.on_review = lambda item, found: self.supersession_review.offer(
            candidates(item, found)
        )
        self._build_thinking(recaller)
        self.exclusions = ExclusionService(
            SQLiteExclusions(self.db), RuntimeExclusions(), lambda text: redact(text).text
        )
        self.filter = HeuristicFilter(
            cfg.filter,
            resolver=self.projects,
            exclusions=self.exclusions.runtime,
            on_auto_exclude=self.exclusions.persist_auto,
        )
        self.perception = PerceptionAgent(
            self.bus.subscribe,
            self.bus.publish,
            self.filter,
            self._remember_perceived,
            queue_size=cfg.perception.queue_size,
        )
        emit = redacting(self.bus.publish, lambda text: redact(text).text)
        self.watchers = [WatcherAgent(w, emit) for w in build_watchers(cfg, paths, self.clock)]
        self.metrics = Metrics(self.metrics_snapshot, version=__version__)
        self.service.recall_observers.append(self.metrics.observe_recall)
        self.service.stage_observers.append(self.metrics.observe_recall_stages)
        self.tool_usage = SQLiteToolUsage(self.db, retention_days=cfg.mcp.usage_retention_days)
        self.mcp = McpMount(cfg, self.web_auth, self.projects)  # /mcp (mnemonic/mcp/)
        self.reactor = self._build_reactor()  # the last thing built: it checks the agents

    def _build_thinking(self, recaller: Recaller) -> None:
        """The thinking half's cycle agents (issues 12 and 13); scheduled by
        ``_cycle_agents`` when enabled, and reachable by the reactor's rules."""
        cfg = self.cfg
        self.episoding = EpisodingAgent(
            store=self.episodes,
            publish=self.bus.publish,
            clock=utcnow,
            config=cfg.episodes,
            completer=self.completer,
        )
        self.consolidations = SQLiteConsolidation(self.db)
        self.consolidation = ConsolidationAgent(
            self.consolidations,
            self.bus.publish,
            utcnow,
            cfg.consolidation,
            self.completer,
            summary_max_chars=cfg.encoding.summary_max_chars,
            max_concepts=cfg.encoding.max_concepts,
        )
        self.enrichment = EnrichmentAgent(
            SQLiteEnrichment(self.db), self.completer, cfg.enrichment, cfg.encoding, utcnow
        )
        self.meta, self.metacognition, self.orchestrator = self._build_metacognition(recaller)
        self.abstraction = AbstractionAgent(
            SQLiteAbstractions(self.db), self.bus.publish, utcnow, cfg.abstraction, self.completer
        )
        self.pattern_refresher = PatternRefresher(
            self.abstraction.store.active_patterns, self.index
        )
        self.dreaming = DreamingAgent(
            SQLiteDreaming(self.db),
            self.bus.publish,
            utcnow,
            cfg.dreaming,
            self.completer,
            redact=lambda text: redact(text).text,
            summary_max_chars=cfg.encoding.summary_max_chars,
            max_concepts=cfg.encoding.max_concepts,
        )

    def _build_reactor(self) -> ReactorRunner:
        """Rules -> agent cycles. A rule may name any cycle agent built above (only the
        enabled ones are scheduled, by ``_cycle_agents``); any other name: ``RuleError``."""
        cfg = self.cfg.reactor
        rules = parse_rules(cfg.rules, cfg.disabled)
        built = {
            agent.name
            for agent in vars(self).values()
            if callable(getattr(agent, "run_cycle", None)) and isinstance(agent.name, str)
        }
        check_agents(rules, built)
        return ReactorRunner(
            rules,
            self.agents,
            SQLiteReactorFires(self.db),
            self.bus.subscribe,
            clock=self.clock.now,
            wall=utcnow,
            queue_size=cfg.queue_size,
            enabled=cfg.enabled,
        )

    def _build_metacognition(
        self, recaller: Recaller
    ) -> tuple[SQLiteMeta, MetacognitionAgent, Orchestrator]:
        """Metacognition (audits, self-test, bounded actions) and the orchestrator that
        watches the thinking half and runs the self-test on its own schedule."""
        cfg = self.cfg
        meta = SQLiteMeta(self.db)
        db_bytes = partial(database_bytes, self.paths.database)
        metacognition = MetacognitionAgent(
            meta,
            self.bus.publish,
            utcnow,
            cfg.metacognition,
            database_bytes=db_bytes,
            recall=recaller_probe(recaller),  # below the service: a probe is no access
            reembed=self.encoder.sweep,
            request_agent=self._request_agent,
            completer=self.completer,
        )
        orchestrator = Orchestrator(
            self.agents,
            self.completer,
            self.store.counts,
            db_bytes,
            self.bus.publish,
            self.clock,
            utcnow,
            interval_s=cfg.orchestrator.interval_s,
            self_test_interval_s=cfg.orchestrator.self_test_interval_s,
            size_threshold=thresholds(cfg.metacognition)["store_size"],
            self_test=metacognition.run_self_test,
            last_self_test=meta.last_self_test,
            self_test_result=lambda: metacognition.last_self_test,
        )
        return meta, metacognition, orchestrator

    def _request_agent(self, name: str, trigger: str) -> None:
        """Start a cycle agent in the background (metacognition asks for consolidations);
        ``AlreadyRunning`` passes through, an agent not scheduled is a ``KeyError``."""
        agent = self.agents.get(name)
        if agent is None:
            raise KeyError(f"agent {name!r} is not scheduled")
        agent.start_now(trigger)

    async def _remember_perceived(self, item: Perceived) -> object:
        remember = RememberInput(
            content=item.content,
            source=item.source,
            project=item.project,
            timestamp=item.timestamp,
            metadata=item.metadata,
            cause=item.cause,
        )
        version = FileVersion.of(remember)  # a watched file: one memory per file
        if version is not None:
            return await self.files.observe(version)
        return await self.service.remember(remember)

    def _recall_index(self) -> tuple[RecallIndex, Checkpointer]:
        """The in-memory recall index, following every write (index/changes.py), and
        what saves it as checkpoints (index/checkpoints.py)."""
        cfg = self.cfg.recall
        index = RecallIndex(
            self.embedder.dim, self.embedder.name, vector_exact_max=cfg.vector_exact_max
        )
        self.db.follow_changes(index)
        checkpoints = Checkpointer(
            index,
            self.db.run_read,
            self.db.run_maintenance,
            self.paths.data_dir / "recall-index",
            cfg,
        )
        index.on_forgot = checkpoints.forgot  # a purge deletes the saved checkpoint
        return index, checkpoints

    async def start(self) -> None:
        """Open the store, load the vector index, subscribe, start the agents."""
        limit_blas_threads()
        await self.db.open()
        try:
            model_changed = await self._record_model(self.embedder)
            await repair_non_finite_metadata(self.db)
        except StorageUnavailable:  # read-only data folder: serve reads, health says why
            model_changed = False
        await self._build_index()
        self.bus.subscribe(
            self.activity.on_event, None, name="activity", queue_size=self.cfg.events.queue_size
        )
        self.bus.subscribe(
            self.service.on_outcome,
            MemoryService.OUTCOME_EVENTS,
            name="write-waiters",
            queue_size=self.cfg.encoding.queue_size,
        )
        await self.exclusions.load()
        agents: list[Agent] = [
            self.watchdog,
            self.encoder,
            PeriodicJob(
                "encoding-sweep", self.cfg.encoding.sweep_interval_s, self.encoder.sweep, self.clock
            ),
            self.perception,
            *self.watchers,
        ]
        agents.append(
            PeriodicJob(
                "index-checkpoint",
                self.cfg.recall.snapshot_check_s,
                self.checkpoints.tick,
                self.clock,
            )
        )
        if self.cfg.agents.heap_trim_interval_s > 0:
            agents.append(
                PeriodicJob(
                    "heap-trim", self.cfg.agents.heap_trim_interval_s, _trim_heap, self.clock
                )
            )
        if model_changed or await self._vectors_unchecked():
            await self._forget_vectors_recipe()
            agents.append(
                _OneShot(
                    "reembed",
                    self._reembed,
                    lambda: {
                        "done": self.reembed_progress.done,
                        "total": self.reembed_progress.total,
                    },
                )
            )
        agents.extend(await self._cycle_agents())
        if self.cfg.orchestrator.enabled:
            agents.append(self.orchestrator)
        agents.append(self.reactor)  # after the registry is filled: rules start its agents
        await self.reactor.open()  # subscribed before ready: no event after start is missed
        self.supervisor.start(agents)
        self.ready = True
        log.info(
            "mnemonic %s ready: recall index %s, %d vectors (%s)",
            __version__,
            self.index.state,
            len(self.index.vectors),
            self.index.vectors.kind,
        )

    async def _vectors_unchecked(self) -> bool:
        """Whether every stored vector may not be the current model's, or its passages
        not cut by the current recipe. Counting stale vectors scans every vector row
        (9.7 s at a million memories, and start-up waited for it), yet vectors only go
        stale when the model or the passage settings change or a re-embedding was cut
        short; so a finished run records what it embedded with (``vectors_model``) and
        later starts skip the scan. Where nothing is recorded yet, the re-embed job counts
        in the background, after start."""
        try:
            return await self.store.get_meta(_VECTORS_MODEL) != self._vectors_recipe()
        except StorageUnavailable:
            return False

    async def _forget_vectors_recipe(self) -> None:
        """Clear ``vectors_model`` before a re-embedding starts: a run cut short then
        leaves the next start to scan the rows themselves, even if the settings went back
        to the recorded ones meanwhile (rows already re-cut carry the other recipe)."""
        try:
            await self.store.set_meta(_VECTORS_MODEL, "")
        except StorageUnavailable:
            log.warning("could not clear the recorded vectors recipe")

    async def _reembed(self) -> None:
        encoding = self.cfg.encoding
        await reembed(
            self.store,
            self.embedder,
            self.reembed_progress,
            passage_lead_words=encoding.passage_lead_words,
            passage_cap=encoding.passage_cap,
        )
        await self.store.set_meta(_VECTORS_MODEL, self._vectors_recipe())

    def _vectors_recipe(self) -> str:
        """What ``vectors_model`` records: the passage rows' name (the model, and the
        recipe unless it is the one rows were cut by before recipes had names), then
        ``+passages``, which marks stores whose passages were backfilled (0009)."""
        encoding = self.cfg.encoding
        models = row_models(self.embedder.name, encoding.passage_lead_words, encoding.passage_cap)
        return models.passages + _PASSAGES

    async def _cycle_agents(self) -> list[ScheduledAgent]:
        """The thinking half's agents, each a bounded cycle on a schedule and on demand
        (``runtime/agent_runs.py``), with the last run of each restored from the log."""
        scheduled: list[ScheduledAgent] = []

        def every(agent: CycleAgent, seconds: float, *, first_s: float | None = None) -> None:
            schedule = Schedule(interval_s=seconds, first_delay_s=first_s)
            scheduled.append(ScheduledAgent(agent, schedule, self.agent_runs, self.clock, utcnow))

        every(self.episoding, self.cfg.episodes.interval_s)
        consolidation = self.cfg.consolidation
        scheduled.append(
            ScheduledAgent(
                self.consolidation,
                Schedule(  # a cron expression, when set, decides alone
                    interval_s=consolidation.interval_s or None,
                    cron=consolidation.cron,
                    next_fire=partial(next_fire, consolidation.cron)
                    if consolidation.cron
                    else None,
                ),
                self.agent_runs,
                self.clock,
                utcnow,
            )
        )
        if self.cfg.enrichment.enabled:
            every(self.enrichment, self.cfg.enrichment.interval_s)
        if self.cfg.abstraction.enabled:
            every(
                RefreshAfterCycle(self.abstraction, self.pattern_refresher),
                self.cfg.abstraction.interval_s,
            )
        if self.cfg.dreaming.enabled:
            every(self.dreaming, self.cfg.dreaming.interval_s)
        if self.cfg.supersession.enabled:
            every(self.supersession_review, self.cfg.supersession.review_interval_s)
        if self.cfg.metacognition.enabled:
            every(self.metacognition, self.cfg.metacognition.interval_s)
        for agent in scheduled:
            self.agents.add(agent)
        try:
            await self.agents.restore(self.agent_runs)
        except StorageUnavailable:
            log.warning("agent run history unavailable; starting without it")
        return scheduled

    async def _build_index(self) -> None:
        """Load the recall index from its last checkpoint and replay the changes logged
        since, or build it from SQLite when there is no usable checkpoint. Start-up waits
        for it on a store of fewer than ``recall.index_wait_below`` memories (ready in well
        under a second, so the first query already runs in memory); a larger store is
        served at once while the index loads or builds in the background (a build takes
        about 10 s per 100k memories) and recall answers through SQL meanwhile."""
        self.index.on_stale = self._rebuild_index
        snapshot = await self.checkpoints.to_load()
        task = asyncio.create_task(self._build_with_patterns(snapshot), name="mnemonic:index")
        self._index_task = task
        task.add_done_callback(_log_index_failure)
        if await self.store.max_seq() < self.cfg.recall.index_wait_below:
            await asyncio.wait({task})

    async def _build_with_patterns(self, snapshot: Path | None) -> None:
        """Build the recall index, then load the patterns recall lifts (their centroids
        are means of the index's vectors, so they wait for it)."""
        await self.index.build(self.db.run_read, snapshot)
        self.checkpoints.built()
        if self.index.ready:
            await self.pattern_refresher.refresh()
        repairing = self._repair_task is not None and not self._repair_task.done()
        if self.index.damaged and not repairing:
            # a task of its own: start-up waits for the index task on a small store, and a
            # rebuild waits for it to end; neither should wait for an embedding run
            task = asyncio.get_running_loop().create_task(
                self._repair_vectors(self.index.damaged), name="mnemonic:vector-repair"
            )
            task.add_done_callback(_log_repair_failure)
            self._repair_task = task

    async def _repair_vectors(self, damaged: int) -> None:
        """Embed again the memories whose stored vector rows a build left out as damaged
        (a blob whose size disagrees with its row, e.g. a page damaged on disk): the
        re-embedding counts them as stale (store/sqlite.py ``_STALE``), and the index
        takes the new rows from the change feed. The recorded recipe is cleared first, so
        a stop before the repair ends leaves the next start to finish it."""
        log.warning(
            "%d stored vector rows are damaged and left out of recall: embedding them again",
            damaged,
        )
        await self._forget_vectors_recipe()
        await self._reembed()

    def _rebuild_index(self) -> None:
        if self._index_task is not None and not self._index_task.done():
            return  # the running build replays the change that made the index stale
        task = asyncio.get_running_loop().create_task(
            self._build_with_patterns(None), name="mnemonic:index-rebuild"
        )
        self._index_task = task
        task.add_done_callback(_log_index_failure)

    async def _record_model(self, embedder: EmbeddingProvider) -> bool:
        old_model = await self.store.get_meta("embedding_model")
        old_dim = await self.store.get_meta("embedding_dim")
        await self.store.set_meta("embedding_model", embedder.name)
        await self.store.set_meta("embedding_dim", str(embedder.dim))
        changed = old_model is not None and (
            old_model != embedder.name or old_dim != str(embedder.dim)
        )
        if changed:
            log.warning(
                "embedding model changed (%s/%s -> %s/%d): re-embedding in the background",
                old_model,
                old_dim,
                embedder.name,
                embedder.dim,
            )
        return changed

    async def stop(self) -> None:
        """Reverse of ``start``: stop taking work, let in-flight writes finish, stop agents
        (each within its timeout), close the bus, save the recall index for the next
        start, checkpoint and close the store."""
        self.ready = False
        await self.service.drain()
        await self.supervisor.stop(self.cfg.agents.stop_timeout_s)
        await self.agents.cancel_background()  # cycles started on demand or by the reactor
        await self.exclusions.drain()
        await self.bus.close()
        await _cancel(self._index_task)
        await _cancel(self._repair_task)
        await self.checkpoints.at_stop()
        self.recaller.close()
        await self.completer.aclose()
        await self.db.close()
        if self.db.closed_cleanly:
            await asyncio.to_thread(mark_clean, self.paths.database)

    def degraded_reasons(self, counts: dict[str, int]) -> list[str]:
        reasons = list(self.notices)
        if counts.get("raw_failed"):
            reasons.append(
                f"{counts['raw_failed']} raw memories failed encoding (see /api/v1/stats)"
            )
        if self.reembed_progress.running:
            reasons.append("re-embedding after a model change")
        if self.db.write_failure:
            reasons.append(f"writes failing: {self.db.write_failure}")
        for agent in self.watchers:
            watched = agent.watcher.health()
            if watched.state == "degraded":
                reasons.append(f"{agent.name}: {watched.message}")
        for status in self.supervisor.statuses():
            if status.state == "restarting":
                reasons.append(f"agent {status.name} crashed: {status.last_error}")
        return reasons

    def llm_tasks(self) -> dict[str, str]:
        """Which mode each task that can use an LLM runs in now: ``llm`` when one is
        configured and its breaker lets calls through, else ``heuristic``."""
        mode = "llm" if self.completer.available else "heuristic"
        tasks = {"supersession review": mode, "consolidation gist summaries": mode}
        tasks["enrichment"] = mode if self.cfg.enrichment.enabled else "off"
        tasks["episode descriptions"] = mode
        return tasks

    async def health(self) -> dict[str, Any]:
        counts = await self.store.counts()
        reasons = self.degraded_reasons(counts)
        return {
            "status": "degraded" if reasons else "ok",
            "reasons": reasons,
            "version": __version__,
            "pid": os.getpid(),
            "url": f"http://{self.cfg.server.host}:{self.cfg.server.port}",
            "uptime_s": round(time.time() - self.started_at, 1),
            "memories": counts,
            "embedding": {
                "model": self.embedder.name,
                "dim": self.embedder.dim,
                "backlog": self.encoder.backlog,
                "reembedding": {
                    "running": self.reembed_progress.running,
                    "done": self.reembed_progress.done,
                    "total": self.reembed_progress.total,
                },
            },
            "vector_index": {
                "path": self.index.vectors.kind,
                "vectors": len(self.index.vectors),
                "storage": "sqlite float32 blobs",
                "bytes": self.index.vectors.nbytes,
            },
            "recall_index": {**self.index.describe(), "checkpoint": self.checkpoints.describe()},
            "agents": self.supervisor.health(),
            "llm": {**self.completer.status(), "tasks": self.llm_tasks()},
            "cognition": self.orchestrator.describe(),
            "schema_version": self.db.schema_version,
        }

    async def stats(self) -> dict[str, Any]:
        breakdown = await self.browse.breakdown()
        by_state = breakdown["by_state"]
        return {
            "memories": {
                "total": sum(by_state.values()),
                "by_state": by_state,
                "by_source": breakdown["by_source"],
                "by_type": breakdown["by_type"],
                "by_project": breakdown["by_project"],
                "associations": breakdown["associations"],
            },
            "raw": {"by_status": breakdown["raw_by_status"], "failed": breakdown["failed"]},
            "queues": {"encoding": self.encoder.backlog},
            "bus": {
                "published": self.bus.published,
                "dropped": self.bus.dropped,
                "subscribers": [
                    {
                        "name": s.name,
                        "depth": s.depth,
                        "capacity": s.capacity,
                        "delivered": s.delivered,
                        "dropped": s.dropped,
                        "failed": s.failed,
                    }
                    for s in self.bus.stats()
                ],
            },
            "websocket": {"clients": self.stream.clients, "per_client": self.stream.stats()},
            "perception": self.perception.stats(),
            "agents": [s.to_json() for s in self.supervisor.statuses()],
            "last_errors": self.activity.last_errors(),
        }

    async def metrics_snapshot(self) -> MetricsSnapshot:
        """What ``/metrics`` reports beyond request counts: aggregate gauges only, no
        per-memory labels (cardinality stays bounded however large the store grows)."""
        by_state, raw_by_status = await self.browse.gauges()
        bus = self.bus.stats()
        queues = {"encoding": self.encoder.backlog}
        queues.update(fold_serials((f"bus:{s.name}", s.depth) for s in bus))
        drops = fold_serials((f"bus:{s.name}", s.dropped) for s in bus)
        for reason, n in self.filter.stats()["dropped"].items():
            drops[f"filter:{reason}"] = n
        return MetricsSnapshot(
            memories_by_state=by_state,
            raw_by_status=raw_by_status,
            queue_depths=queues,
            drops=drops,
            events_published=self.bus.published,
            websocket_clients=self.stream.clients,
            vectors=len(self.index.vectors),
            loop_stalls=self.watchdog.stalls,
            loop_longest_stall_s=self.watchdog.longest_s,
            database_bytes=self.orchestrator.database_bytes,
            self_test_hit_rate=(self.orchestrator.latest_self_test() or {}).get("hit_rate"),
            agent_failures={a.name: a.failures for a in self.agents.all()},
            agent_running={a.name: int(a.running) for a in self.agents.all()},
        )

    def app(self) -> Starlette:
        """The ASGI app; its lifespan starts and stops the daemon."""

        @asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            await self.start()
            try:
                async with self.mcp.running():
                    yield
            finally:
                await self.stop()

        app = build_app(
            self.service,
            self.health,
            port=self.cfg.server.port,
            token=self.token,
            auth=self.web_auth,
            max_body_bytes=self.cfg.server.max_body_bytes,
            ready=lambda: self.ready,
            lifespan=lifespan,
            extra_routes=[
                *build_browse_routes(self.service, self.browse, self.activity, self.stats),
                *build_exclusion_routes(self.exclusions),
                *build_purge_routes(self.service, self.purges),
                *build_llm_routes(self.completer, self.llm_usage),
                *build_supersession_routes(self.supersessions),
                *build_agent_routes(self.agents),
                *build_enrichment_routes(self.enrichment, utcnow),
                *build_consolidation_routes(self.consolidations, utcnow),
                *build_episode_routes(self.episodes),
                *build_dashboard_routes(
                    self.service, self.browse, self.aggregates, SQLiteDashboard(self.db)
                ),
                *build_insight_routes(self.dreaming.store),
                *build_abstraction_routes(
                    self.abstraction.store, utcnow, on_change=self.pattern_refresher.refresh
                ),
                *build_reactor_routes(self.reactor),
                *build_meta_routes(self.meta),
                *build_tool_usage_routes(self.tool_usage),
                *build_link_routes(LinkService(SQLiteFiles(self.db), self.bus.publish)),
                *build_settings_routes(
                    self.cfg,
                    lambda: [agent.watcher for agent in self.watchers],
                    TokenRotator(
                        self.paths.token_file,
                        self.web_auth.set_token,
                        env_token=lambda: os.environ.get(TOKEN_ENV),
                    ),
                    self.web_auth,
                ),
                WebSocketRoute("/ws", self.stream.endpoint),
            ],
            metrics=self.metrics,
        )
        self.mcp.bind(app)
        return app


def apply_process_settings(cfg: Config) -> None:
    """Process-wide settings of a serving daemon (never of a library user's process).

    Agents compute in worker threads; each time the event loop hands the GIL away (a numpy
    call, a database read, a socket) it waits up to a whole switch interval to get it back
    from a busy thread. Python's 5 ms default made /query during a dreaming or abstraction
    cycle at 100k about 3x slower than quiet (BENCHMARKS.md, "Cycle durations at 100k")."""
    sys.setswitchinterval(cfg.agents.gil_switch_interval_ms / 1000)


def serve(cfg: Config, paths: Paths) -> int:
    """Run the daemon in the foreground until SIGINT/SIGTERM; returns the exit code.

    The runner owns the process concerns (instance lock, socket, database check, signals,
    sd_notify); this function only says how to build the app once those are settled."""
    from mnemonic import runner
    from mnemonic.logs import setup_logging

    paths.ensure()
    setup_logging(cfg.logging.level, paths.log_dir)
    apply_process_settings(cfg)
    write_default_config(paths)
    restrict(paths.config_file)  # a config.yaml an older build or an editor made 0644
    token = load_or_create_token(paths, os.environ.get(TOKEN_ENV))

    def build(notices: list[str]) -> Starlette:
        try:
            return Daemon(cfg, paths, token, notices=notices).app()
        except RuleError as exc:  # a rule runs an agent no daemon has: like a bad config.yaml
            from mnemonic.exits import EX_CONFIG

            sys.stderr.write(f"mnemonic: invalid configuration: {exc}\n")
            raise SystemExit(EX_CONFIG) from None

    return runner.run(build, host=cfg.server.host, port=cfg.server.port, paths=paths)
