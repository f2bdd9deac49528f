"""One typed configuration model, a section per component.

Precedence: explicit overrides (CLI flags) > ``MNEMONIC_*`` environment > ``config.yaml`` >
defaults. Every field has a description; ``render_default_yaml`` turns them into the
commented ``config.yaml`` that the repository ships and the daemon writes on first start,
so the documentation cannot drift from the model (a test compares them).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from mnemonic.yaml_bounded import load_bounded


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerConfig(_Section):
    host: str = Field("127.0.0.1", description="Interface to bind; keep it on loopback.")
    port: int = Field(9999, ge=1, le=65535, description="TCP port of the REST API.")
    max_body_bytes: int = Field(
        32 * 1024 * 1024, ge=1024, description="Largest accepted request body (413 above)."
    )


class StorageConfig(_Section):
    busy_timeout_ms: int = Field(5000, ge=0, description="How long SQLite waits on a lock.")
    journal_size_limit_bytes: int = Field(
        64 * 1024 * 1024, ge=0, description="WAL size kept after a checkpoint."
    )
    cache_size_kib: int = Field(32 * 1024, ge=0, description="Page cache per connection.")
    read_connections: int = Field(2, ge=1, le=16, description="Pooled read-only connections.")
    write_recovery_s: float = Field(
        5.0,
        ge=0,
        le=3600,
        description="How long writes must work without a storage error before health "
        "stops reporting the failure.",
    )


class EmbeddingConfig(_Section):
    provider: Literal["onnx", "openai"] = Field(
        "onnx", description="onnx = embedded MiniLM (offline); openai = /v1/embeddings endpoint."
    )
    model: str = Field("nomic-embed-text", description="Model name sent to the openai provider.")
    base_url: str = Field(
        "http://127.0.0.1:11434/v1", description="Base URL of the OpenAI-compatible endpoint."
    )
    api_key_env: str = Field(
        "MNEMONIC_EMBEDDING_API_KEY", description="Environment variable holding its API key."
    )
    threads: int = Field(2, ge=1, le=64, description="CPU threads of the embedded model.")
    batch_size: int = Field(32, ge=1, le=512, description="Texts per model call.")
    batch_tokens: int = Field(
        2048,
        ge=16,
        le=65536,
        description="Padded tokens per model call at most: long texts go in smaller batches, "
        "which bounds the model's memory.",
    )
    max_tokens: int = Field(256, ge=16, le=512, description="Tokens kept per text.")
    timeout_s: float = Field(30.0, gt=0, description="Timeout of one endpoint request.")


class LlmPrice(_Section):
    input: float = Field(..., ge=0, description="USD per million prompt tokens.")
    output: float = Field(..., ge=0, description="USD per million completion tokens.")


class LlmConfig(_Section):
    provider: Literal["none", "openai", "litellm"] = Field(
        "none",
        description="none = heuristics only; openai = any OpenAI-compatible endpoint "
        "(Ollama, LM Studio, llama.cpp, vLLM, OpenAI); litellm = other providers "
        "(pip install 'mnemonic[litellm]').",
    )
    base_url: str = Field(
        "http://127.0.0.1:11434/v1",
        description="Base URL of the endpoint (Ollama's by default); litellm uses it as "
        "api_base only when it is set explicitly.",
    )
    model: str = Field(
        "llama3.2:3b", min_length=1, description="Model name (litellm: provider/model)."
    )
    api_key_env: str = Field(
        "MNEMONIC_LLM_API_KEY", description="Environment variable holding its API key."
    )
    timeout_s: float = Field(60.0, gt=0, le=3600, description="Timeout of one request.")
    deadline_s: float = Field(
        120.0,
        gt=0,
        le=3600,
        description="Deadline of one judgment: every request, retry and repair of it.",
    )
    max_retries: int = Field(
        2, ge=0, le=10, description="Retries of a failed request (connection, 429, 5xx)."
    )
    repair_attempts: int = Field(
        2, ge=0, le=5, description="Re-asks when an answer is not valid JSON for the schema."
    )
    breaker_failures: int = Field(
        5, ge=1, le=1000, description="Consecutive failures that open the circuit breaker."
    )
    breaker_cooldown_s: float = Field(
        60.0, gt=0, le=86400, description="How long the breaker stays open before a probe."
    )
    max_concurrency: int = Field(2, ge=1, le=64, description="Requests in flight at most.")
    max_wait_s: float = Field(
        5.0,
        ge=0,
        le=600,
        description="How long a call waits for a free slot before its task uses the "
        "heuristic instead (nothing queues without bound).",
    )
    json_mode: Literal["auto", "schema", "prompt"] = Field(
        "auto",
        description="schema = response_format json_schema; prompt = schema in the prompt, "
        "parse and repair; auto = schema, falling back to prompt if the server refuses it.",
    )
    prices: dict[str, LlmPrice] = Field(
        default_factory=dict,
        description="Price overrides by model-name prefix, e.g. {gpt-4o-mini: {input: 0.15, "
        "output: 0.6}} (USD per million tokens; unknown and local models cost 0).",
    )


class EncodingConfig(_Section):
    summary_max_chars: int = Field(200, ge=20, le=1000, description="Summary length cap.")
    max_concepts: int = Field(8, ge=0, le=32, description="Keyphrases kept per memory.")
    near_duplicate_threshold: float = Field(
        0.95, ge=0.5, le=1.0, description="Cosine at or above which a same-type memory merges."
    )
    link_min_similarity: float = Field(
        0.3, ge=0.0, le=1.0, description="Cosine above which similar memories are linked."
    )
    link_candidates: int = Field(10, ge=0, le=100, description="Neighbours checked for links.")
    max_links_per_memory: int = Field(
        8, ge=0, le=100, description="Links created for one new memory."
    )
    temporal_window_s: float = Field(
        1800.0, ge=0, description="Memories this close in time link as temporal."
    )
    sequence_link_strength: float = Field(
        0.6,
        ge=0.0,
        le=1.0,
        description="Strength of the temporal link to the previous memory of the project.",
    )
    reinforce_step: float = Field(
        0.05, ge=0.0, le=0.5, description="Salience added when a duplicate reinforces."
    )
    passage_cap: int = Field(
        12,
        ge=0,
        le=64,
        description="Passage vectors embedded per memory besides its whole text (0 = none);"
        " past this many sentences, runs of adjacent sentences.",
    )
    passage_lead_words: int = Field(
        4, ge=0, le=32, description="The memory's first words, put before each passage."
    )
    batch_max: int = Field(64, ge=1, le=1024, description="Embedding batch size of the encoder.")
    batch_wait_ms: float = Field(
        50.0, ge=0, description="How long the encoder waits to fill a batch."
    )
    wait_timeout_s: float = Field(
        30.0, gt=0, description="How long a write with wait=true waits before answering 202."
    )
    queue_size: int = Field(
        65536, ge=16, description="Announced memories the encoder's bus queue holds."
    )
    max_attempts: int = Field(
        5, ge=1, le=100, description="Encoding attempts before a raw memory is marked failed."
    )
    batch_timeout_s: float = Field(
        120.0,
        gt=0,
        le=3600,
        description="Deadline of one encoding attempt (embedding and linking); past it, failed.",
    )
    retry_base_s: float = Field(
        0.5, gt=0, le=60, description="Retry delay base; doubles per attempt, capped at 30 s."
    )
    sweep_interval_s: float = Field(
        60.0, gt=0, description="How often the store is swept for memories left without a vector."
    )
    salience: dict[str, float] = Field(
        default_factory=lambda: {
            "decision": 0.85,
            "error": 0.8,
            "insight": 0.9,
            "learning": 0.8,
            "general": 0.7,
            "handoff": 0.95,
        },
        description="Initial salience by memory type.",
    )


RELATION_WEIGHTS: dict[str, float] = {
    "similar": 0.6,
    "temporal": 1.0,
    "reinforces": 0.5,
    "contradicts": 0.3,
    "caused_by": 0.8,
    "part_of": 0.7,
    "supersedes": 0.6,
    "related": 0.5,
}
TYPE_WEIGHTS: dict[str, float] = dict.fromkeys(
    ("decision", "error", "insight", "learning", "general", "handoff"), 1.0
)
SOURCE_WEIGHTS: dict[str, float] = dict.fromkeys(
    (
        "api",
        "mcp",
        "terminal",
        "filesystem",
        "clipboard",
        "git",
        "user",
        "ingest",
        "cli",
        "dreaming",
    ),
    1.0,
)
_WEIGHT_DEFAULTS = {
    "relation_weights": RELATION_WEIGHTS,
    "type_weights": TYPE_WEIGHTS,
    "source_weights": SOURCE_WEIGHTS,
}


class RecallConfig(_Section):
    fts_candidates: int = Field(60, ge=1, le=1000, description="BM25 entry points per query.")
    vector_candidates: int = Field(60, ge=1, le=1000, description="Vector entry points.")
    fts_match_budget: int = Field(
        8000, ge=100, description="Work bound: rows BM25 may rank; commonest terms go first."
    )
    fusion: Literal["linear", "rrf"] = Field(
        "linear", description="linear = weighted min-max scores; rrf = reciprocal-rank fusion."
    )
    rrf_k: float = Field(60.0, gt=0, description="Reciprocal-rank-fusion constant.")
    fts_weight: float = Field(
        1.3,
        ge=0,
        description="Weight of the full-text ranking in fusion, for a question that names"
        " something (a name, a number, an identifier).",
    )
    fts_weight_plain: float = Field(
        1.0,
        ge=0,
        description="Weight of the full-text ranking for a question that names nothing"
        " (recall/naming.py): a described answer is matched better by meaning.",
    )
    vector_weight: float = Field(1.0, ge=0, description="Weight of the vector ranking in fusion.")
    clause_weight: float = Field(
        0.5,
        ge=0,
        description="Weight of the vector ranking of a question's clauses (recall/clauses.py:"
        " 'How old was I when Alex was born?' also asks 'How old was I' and 'Alex was born');"
        " 0 = off.",
    )
    common_name_share: float = Field(
        0.25,
        ge=0,
        le=1,
        description="A question naming a speaker of the conversation it searches ('What does"
        " Melanie do to destress?' where turns read 'Melanie: ...') is also searched by"
        " meaning without that name, in the clauses' ranking: names held by at least this"
        " share of the memories the query can see, mostly as a leading 'Name:' label;"
        " 0 = off.",
    )
    passage_vectors: bool = Field(
        True,
        description="A memory's vector score is its best passage's or its whole text's,"
        " whichever is higher (encoding.passage_cap).",
    )
    spread_seeds: int = Field(20, ge=0, le=200, description="Top fused hits that spread.")
    spread_hops: int = Field(3, ge=0, le=6, description="Hops of spreading activation.")
    spread_decay: float = Field(0.7, ge=0, le=1, description="Activation kept per hop.")
    spread_threshold: float = Field(
        0.05, ge=0, le=1, description="Activation (relative to the top seed) a node needs."
    )
    spread_max_nodes: int = Field(500, ge=1, description="Work bound: nodes activated per query.")
    spread_frontier: int = Field(
        40, ge=1, le=1000, description="Work bound: strongest nodes that spread on each hop."
    )
    spread_weight: float = Field(
        1.0, ge=0, description="Weight of spread activation against direct hits."
    )
    relation_weights: dict[str, float] = Field(
        default_factory=lambda: dict(RELATION_WEIGHTS),
        description="How well each relation type carries activation.",
    )
    pattern_weight: float = Field(
        0.0,
        ge=0,
        description="Weight of the lift a matching pattern gives its evidence memories"
        " (0 turns the pattern signal off).",
    )
    pattern_threshold: float = Field(
        0.45,
        ge=-1,
        le=1,
        description="Cosine between the query and a pattern's centroid for the pattern to match.",
    )
    pattern_top: int = Field(
        3, ge=0, le=50, description="At most this many matching patterns lift their evidence."
    )
    recency_weight: float = Field(0.05, ge=0, le=1, description="Boost share for recent memories.")
    recency_half_life_days: float = Field(30.0, gt=0, description="Half-life of the boost.")
    salience_weight: float = Field(0.1, ge=0, le=1, description="Boost share for salience.")
    significance_weight: float = Field(
        0.05, ge=0, le=1, description="Boost share for significance."
    )
    type_weights: dict[str, float] = Field(
        default_factory=lambda: dict(TYPE_WEIGHTS), description="Multiplier by memory type."
    )
    source_weights: dict[str, float] = Field(
        default_factory=lambda: dict(SOURCE_WEIGHTS), description="Multiplier by memory source."
    )

    @field_validator("relation_weights", "type_weights", "source_weights")
    @classmethod
    def _weights_over_defaults(
        cls, value: dict[str, float], info: ValidationInfo
    ) -> dict[str, float]:
        """A partial mapping changes only the keys it names. Without this, one variable such
        as ``MNEMONIC_RECALL__RELATION_WEIGHTS__RELATED=0.25`` (or a config.yaml listing one
        relation) replaced the whole mapping, and every relation it left out stopped
        carrying activation: LoCoMo R@10 fell from 0.731 to 0.682 that way. A misspelt key
        would have been ignored the same way, so an unknown one is refused by name."""
        defaults = _WEIGHT_DEFAULTS[str(info.field_name)]
        unknown = sorted(set(value) - set(defaults))
        if unknown:
            raise ValueError(f"unknown keys {unknown}; known: {sorted(defaults)}")
        negative = sorted(k for k, v in value.items() if v < 0)
        if negative:
            raise ValueError(f"weights must be >= 0: {negative}")
        return {**defaults, **value}

    mmr_lambda: float = Field(
        0.7,
        ge=0,
        le=1,
        description="MMR: share of its relevance a result keeps when it is identical to one"
        " already picked (less for less alike; 1 = no diversification).",
    )
    mmr_pool: int = Field(50, ge=1, le=1000, description="Ranked candidates MMR chooses from.")
    when_weight: float = Field(
        0.5,
        ge=0,
        le=10,
        description="For a question naming a time ('two weeks ago', 'last Friday'): boost of"
        " memories inside that window, which is also searched as an entry point (0 = off).",
    )
    episode_spread: float = Field(
        0.8,
        ge=0,
        le=1,
        description="For a question about several events (a count, a total, a comparison):"
        " each result taken from an episode multiplies the relevance of that episode's other"
        " candidates by this (1 = off).",
    )
    mmr_duplicate_cosine: float = Field(
        0.95, ge=0, le=1, description="Cosine at which two results may be near copies."
    )
    mmr_duplicate_words: float = Field(
        0.8, ge=0, le=1, description="Word-pair overlap at which such a pair is a copy (dropped)."
    )
    vector_floor: float = Field(
        0.3, ge=-1, le=1, description="Cosine at or below which a vector hit is no evidence."
    )
    vector_full: float = Field(0.75, ge=-1, le=1, description="Cosine that is full evidence.")
    words_power: float = Field(
        2.0, ge=1, le=10, description="Word evidence = (share of query words held) ** this."
    )
    min_score: float = Field(
        0.05, ge=0, le=1, description="Results scoring below this are left out (0 keeps all)."
    )
    default_states: list[str] = Field(
        default_factory=lambda: ["active", "fading"], description="States recalled by default."
    )
    index: Literal["memory", "sql"] = Field(
        "memory",
        description="memory = in-memory indexes (fast); sql = SQLite for every query (diagnosis).",
    )
    query_cache_size: int = Field(
        512, ge=0, le=100_000, description="Query vectors kept for repeated queries (0 = none)."
    )
    vector_exact_max: int = Field(
        50_000,
        ge=1,
        description="Vectors searched exactly up to this many; past it an HNSW index (usearch).",
    )
    index_wait_below: int = Field(
        20_000,
        ge=0,
        description="Start-up waits for the recall index build below this many memories.",
    )
    index_snapshot: bool = Field(
        True,
        description="Save the recall index as checkpoints; a start loads the last one and"
        " replays the changes logged since (seconds instead of minutes at scale).",
    )
    snapshot_check_s: float = Field(
        60, gt=0, description="How often the daemon checks whether a checkpoint is due."
    )
    snapshot_change_share: float = Field(
        0.05,
        ge=0,
        le=10,
        description="A checkpoint is due once this share of the store's memories in changes"
        " has been logged since the last one (writes wait while it is saved).",
    )
    snapshot_min_changes: int = Field(
        5000, ge=1, description="Changes that make a checkpoint due, at the least."
    )
    snapshot_max_age_s: float = Field(
        21600, gt=0, description="Any change makes a checkpoint due once the last is this old."
    )
    snapshot_quiet_s: float = Field(
        10,
        ge=0,
        description="A due checkpoint waits this long without a write (not past twice the"
        " change threshold).",
    )
    snapshot_stop_budget_s: float = Field(
        1.5,
        ge=0,
        description="Save at shutdown only if the last saves say it takes at most this;"
        " otherwise the next start replays the log (shutdown must end within 5 s).",
    )
    superseded_factor: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Strength kept by a memory a newer one supersedes (its successor ranks"
        " at least where it would have stood).",
    )
    archived_fallback: bool = Field(
        True,
        description="When active and fading memories answer a query weakly, also search"
        " archived ones (ranked below, marked in explain).",
    )
    archived_fallback_below: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Top score under which a query counts as weakly answered (or fewer"
        " results than asked).",
    )
    archived_factor: float = Field(
        0.8, ge=0, le=1, description="Score kept by an archived memory found by the fallback."
    )


class FeedbackConfig(_Section):
    utility_min: float = Field(0.5, gt=0, le=1, description="Lower bound of the utility factor.")
    utility_max: float = Field(1.5, ge=1, le=4, description="Upper bound of the utility factor.")
    helpful_step: float = Field(0.1, ge=0, le=1, description="Utility added by 'helpful'.")
    partial_step: float = Field(0.03, ge=0, le=1, description="Utility added by 'partial'.")
    irrelevant_step: float = Field(0.1, ge=0, le=1, description="Utility removed by 'irrelevant'.")
    link_step: float = Field(0.05, ge=0, le=1, description="Strength change of traversed links.")


class EventsConfig(_Section):
    queue_size: int = Field(1024, ge=16, description="Default bounded queue per bus subscriber.")
    activity_size: int = Field(
        500, ge=10, le=100_000, description="Recent events kept for /api/v1/activity."
    )


class WebSocketConfig(_Section):
    max_clients: int = Field(16, ge=1, le=1024, description="Concurrent /ws clients allowed.")
    queue_size: int = Field(
        2048, ge=16, description="Events queued per client before the oldest are dropped."
    )
    ping_interval_s: float = Field(30.0, gt=0, description="Keep-alive ping interval.")
    content_max_chars: int = Field(
        500, ge=0, description="Longer content in streamed events is truncated to this."
    )


DEFAULT_HALF_LIVES: dict[str, float] = {
    "general": 30.0,
    "learning": 45.0,
    "insight": 60.0,
    "error": 90.0,
    "decision": 120.0,
    "handoff": 0.0,
}


class ConsolidationConfig(_Section):
    interval_s: float = Field(
        6 * 3600.0, ge=0, description="Seconds between scheduled cycles (0: none by interval)."
    )
    cron: str | None = Field(
        None,
        description="Optional crontab schedule of cycles, e.g. '0 3 * * *' (03:00 UTC daily).",
    )
    half_life_days: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_HALF_LIVES),
        description="Days for salience (above the floor) to halve, per memory type; "
        "0: that type never decays; a type left out keeps its default.",
    )
    salience_floor: float = Field(
        0.05, ge=0, le=0.5, description="Decay never takes salience below this."
    )
    grace_days: float = Field(
        3.0, ge=0, description="No decay for this many days after creation or the last access."
    )
    utility_exponent: float = Field(
        2.0,
        ge=0,
        le=8,
        description="Half-life is multiplied by utility**this: helpful memories decay slower, "
        "unhelpful ones faster.",
    )
    fading_below: float = Field(0.3, gt=0, le=1, description="Active becomes fading below this.")
    revive_above: float = Field(
        0.4, gt=0, le=1, description="Fading becomes active again at or above this salience."
    )
    archive_below: float = Field(
        0.12, ge=0, le=1, description="Salience below which an idle memory is archived."
    )
    archive_idle_days: float = Field(
        30.0, ge=0, description="Archiving also needs no access (or creation) for this long."
    )
    merge_similarity: float = Field(
        0.93, ge=0.5, le=1.0, description="Cosine at or above which memories may merge."
    )
    merge_min_word_overlap: float = Field(
        0.6,
        ge=0,
        le=1,
        description="Least share of content words two memories must have in common to merge.",
    )
    merge_max_cluster: int = Field(5, ge=2, le=50, description="Most memories in one merge.")
    gist_max_chars: int = Field(
        4000, ge=100, le=100_000, description="A merge whose gist would be longer is skipped."
    )
    merge_scan_per_cycle: int = Field(
        2000,
        ge=0,
        le=100_000,
        description="New memories compared for near-duplicates per cycle (0: no merging).",
    )
    llm_gist: bool = Field(True, description="Ask the LLM (when available) for the gist's summary.")
    link_prune_below: float = Field(
        0.1, ge=0, le=1, description="Links never used by a recall and weaker than this are pruned."
    )
    link_prune_age_days: float = Field(
        30.0, ge=0, description="Pruning spares links younger than this many days."
    )
    max_changes: int = Field(
        250_000, ge=1, description="Most rows (memories and links) one cycle writes."
    )
    max_seconds: float = Field(120.0, gt=0, description="Longest a cycle may run.")
    decay_min_interval_s: float = Field(
        3600.0,
        ge=0,
        description="A cycle decays only when the last full decay pass is at least this old"
        " (decay over the whole elapsed time then; nothing is lost by waiting).",
    )
    prune_min_interval_s: float = Field(
        86400.0,
        ge=0,
        description="Walk every link for weak, unused ones at most this often (a walk reads"
        " every link).",
    )
    pace: float = Field(
        1.0,
        ge=0,
        le=20,
        description="After each chunk of work a cycle rests this many times as long as the"
        " chunk took, so queries keep the cores (0: no rest).",
    )
    write_batch: int = Field(
        2000, ge=1, le=100_000, description="Rows per write transaction (short locks)."
    )
    max_state_events: int = Field(
        100,
        ge=0,
        le=10_000,
        description="Individual MemoryStateChanged events per cycle; the rest are counted.",
    )

    @field_validator("cron")
    @classmethod
    def _valid_cron(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        from mnemonic.cron import parse_cron

        parse_cron(value)  # ValueError names what is wrong; pydantic names the key
        return value.strip()

    @field_validator("half_life_days")
    @classmethod
    def _known_types(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(DEFAULT_HALF_LIVES))
        if unknown:
            raise ValueError(f"unknown memory types {unknown}; known: {sorted(DEFAULT_HALF_LIVES)}")
        if any(v < 0 for v in value.values()):
            raise ValueError("half-lives must be >= 0")
        return value  # types left out keep their default (merged where it is used)


class EpisodesConfig(_Section):
    gap_s: float = Field(
        600.0, gt=0, le=86400, description="Inactivity (seconds) that closes an episode."
    )
    max_span_s: float = Field(
        4 * 3600.0, gt=0, le=7 * 86400, description="Longest span of one episode (seconds)."
    )
    batch_size: int = Field(
        500, ge=1, le=100_000, description="Memories grouped per batch of an episoding cycle."
    )
    batches_per_cycle: int = Field(
        10, ge=1, le=1000, description="Batches one cycle takes at most (the rest waits)."
    )
    close_per_cycle: int = Field(
        50, ge=1, le=10_000, description="Episodes closed and described per cycle at most."
    )
    interval_s: float = Field(60.0, gt=0, description="How often the episoding agent runs.")
    summary_max_chars: int = Field(
        600, ge=50, le=10_000, description="Longest episode summary (characters)."
    )
    title_max_chars: int = Field(80, ge=20, le=500, description="Longest episode title.")
    max_concepts: int = Field(8, ge=1, le=50, description="Concepts kept per episode.")
    max_files: int = Field(30, ge=0, le=1000, description="Files listed per episode.")
    max_commands: int = Field(30, ge=0, le=1000, description="Commands listed per episode.")
    describe_max_members: int = Field(
        1000,
        ge=10,
        le=100_000,
        description="Most salient members read to describe one episode.",
    )
    llm_max_members: int = Field(
        40, ge=1, le=500, description="Members (most salient first) shown to the LLM."
    )


class DreamingConfig(_Section):
    enabled: bool = Field(
        True,
        description="Replay salient memories in the background: strengthen links that "
        "co-activate, link memories sharing rare terms across episodes, write insights.",
    )
    interval_s: float = Field(6 * 3600.0, gt=0, description="How often the dreamer runs.")
    min_interval_s: float = Field(
        600.0,
        ge=0,
        description="Cooldown: a cycle (other than a manual run) starting sooner than this "
        "after the last one does nothing (the reactor dreams after each episode closes).",
    )
    replay_batch: int = Field(
        500, ge=0, le=100_000, description="Memories replayed per cycle (the most salient)."
    )
    replay_window: int = Field(
        4,
        ge=1,
        le=100,
        description="The batch is the most salient of the next replay_batch x this "
        "memories after the rotating cursor (it wraps around at the end).",
    )
    neighbour_min_strength: float = Field(
        0.5, ge=0, le=1, description="Links this strong make a replayed memory's neighbourhood."
    )
    max_neighbours: int = Field(
        20, ge=0, le=1000, description="Strongest neighbours kept per replayed memory."
    )
    eta: float = Field(
        0.05, ge=0, le=1, description="Learning rate: strength += eta x (ceiling - strength)."
    )
    strength_ceiling: float = Field(
        0.9, gt=0, le=1, description="Co-activation never raises a link above this."
    )
    max_strengthened_per_cycle: int = Field(
        500, ge=0, le=1_000_000, description="Link strength updates per cycle at most."
    )
    queries_per_cycle: int = Field(
        1000, ge=0, le=1_000_000, description="New logged recalls read per cycle at most."
    )
    coretrieval_top: int = Field(
        5, ge=2, le=100, description="Top results of a recall that count as co-activated."
    )
    helpful_weight: int = Field(
        2, ge=0, le=10, description="Co-activation steps for a pair rated helpful together."
    )
    coretrieval_min_count: int = Field(
        3,
        ge=1,
        le=1000,
        description="Unlinked memories recalled together this often (in the last "
        "coretrieval_lookback recalls) get a 'related' link.",
    )
    coretrieval_lookback: int = Field(
        2000, ge=0, le=1_000_000, description="Recent recalls counted for coretrieval_min_count."
    )
    coretrieval_link_strength: float = Field(
        0.3, gt=0, le=1, description="Strength of a link made from co-retrieval."
    )
    max_df_share: float = Field(
        0.02,
        gt=0,
        le=1,
        description="A concept or entity in more than this share of memories links nothing "
        "(too common to mean anything).",
    )
    max_term_df: int = Field(
        50,
        ge=2,
        le=100_000,
        description="Nor one in more than this many memories (also bounds a cycle's work).",
    )
    min_shared_idf: float = Field(
        0.6,
        ge=0,
        description="Evidence needed for a cross-episode link: the sum over shared terms of "
        "ln(N/df)/ln(N) (1 = a term only these memories hold).",
    )
    max_link_strength: float = Field(
        0.8, gt=0, le=1, description="Strongest cross-episode link (1 - exp(-evidence))."
    )
    max_related_per_memory: int = Field(
        5, ge=0, le=1000, description="'related' links one memory may have at most."
    )
    max_links_per_cycle: int = Field(
        1000, ge=0, le=1_000_000, description="New 'related' links per cycle at most."
    )
    max_terms_per_memory: int = Field(
        16, ge=1, le=256, description="Concepts and entities of one memory that count."
    )
    min_episodes: int = Field(
        3,
        ge=2,
        le=1000,
        description="Two terms found together in this many distinct episodes make an insight.",
    )
    max_insights_per_cycle: int = Field(
        3, ge=0, le=100, description="Insight memories written per cycle at most."
    )
    insight_max_sources: int = Field(
        10, ge=2, le=1000, description="Source memories recorded per insight (most salient)."
    )
    llm_insights: bool = Field(
        True,
        description="Ask the LLM (when available) to word an insight; kept only when "
        "grounded in its sources, else the heuristic text is written.",
    )
    process_min_memories: int = Field(
        10_000,
        ge=0,
        description="With this many live memories or more a cycle's reads and term work run "
        "in a separate process (in the daemon they would hold the GIL against requests); "
        "fewer run in a thread.",
    )


class EnrichmentConfig(_Section):
    enabled: bool = Field(
        True,
        description="Re-encode new memories with the LLM in the background (only acts when "
        "an LLM is configured; the acknowledgement path never waits for it).",
    )
    interval_s: float = Field(60.0, gt=0, description="How often the enrichment agent runs.")
    batch_size: int = Field(
        20, ge=1, le=1000, description="Memories sent to the LLM per cycle at most."
    )
    max_per_hour: int = Field(
        600, ge=0, le=1_000_000, description="LLM calls per rolling hour at most (0: none)."
    )
    max_content_chars: int = Field(
        6000,
        ge=200,
        le=200_000,
        description="Characters of a memory shown to the LLM (longer ones are cut).",
    )
    catch_up_s: float = Field(
        3600.0,
        ge=0,
        le=30 * 86400,
        description="New memories older than this (seconds since they arrived) are not "
        "enriched automatically after an outage; 'mnemonic reencode --since' does that.",
    )


class SupersessionConfig(_Section):
    enabled: bool = Field(
        True,
        description="Link a new memory 'supersedes' an older one of its project when it"
        " updates it (heuristics tuned to miss; an LLM settles borderline pairs).",
    )
    review_per_memory: int = Field(
        2, ge=0, le=10, description="Borderline neighbours per new memory sent to the LLM."
    )
    review_interval_s: float = Field(
        60.0, gt=0, description="How often the LLM review of borderline pairs runs."
    )
    review_batch: int = Field(20, ge=1, le=1000, description="Pairs the LLM judges per cycle.")
    review_max_pending: int = Field(
        1000, ge=1, description="Pairs waiting for the LLM (oldest dropped beyond)."
    )


class AbstractionConfig(_Section):
    enabled: bool = Field(
        True, description="Find recurring themes (patterns), principles and axioms (background)."
    )
    interval_s: float = Field(3600.0, gt=0, description="How often the abstraction agent runs.")
    max_nodes: int = Field(
        5000, ge=10, le=200_000, description="Live memories clustered per cycle at most."
    )
    salient_share: float = Field(
        0.25,
        ge=0,
        le=1,
        description="Share of max_nodes taken by the most salient older memories (the rest "
        "are the newest).",
    )
    algorithm: Literal["louvain", "greedy"] = Field(
        "louvain", description="Community detection: louvain (fast) or greedy modularity."
    )
    resolution: float = Field(
        1.0, gt=0, le=10, description="Community resolution (higher: smaller themes)."
    )
    seed: int = Field(13, ge=0, description="Seed of Louvain, so a cycle is reproducible.")
    process_min_nodes: int = Field(
        2000,
        ge=0,
        description="Clustering this many memories or more runs in a separate process (its "
        "pure-Python work would hold the GIL against requests); fewer run in a thread.",
    )
    max_term_df: int = Field(
        50,
        ge=2,
        le=100_000,
        description="A concept or entity in more memories than this links none of them "
        "(too common to mark a theme).",
    )
    term_window: int = Field(
        8, ge=1, le=100, description="Each memory is linked to this many next holders of a term."
    )
    min_evidence: int = Field(
        4, ge=2, le=1000, description="Memories a theme needs (over >= 2 episodes or days)."
    )
    max_concepts: int = Field(6, ge=1, le=30, description="Concepts kept per abstraction.")
    match_jaccard: float = Field(
        0.34,
        ge=0,
        le=1,
        description="Concept overlap (Jaccard) a cluster needs to update a stored pattern "
        "(the super-attractor guard).",
    )
    same_theme_jaccard: float = Field(
        0.7,
        ge=0,
        le=1,
        description="Concept overlap at which a cluster updates a pattern without shared "
        "evidence (the same theme in fresh memories).",
    )
    min_evidence_overlap: float = Field(
        0.2,
        ge=0,
        le=1,
        description="Share of a cluster already evidence of the pattern it updates.",
    )
    merge_jaccard: float = Field(
        0.6, ge=0, le=1, description="Concept overlap of two patterns merged as near-duplicates."
    )
    merge_evidence_overlap: float = Field(
        0.5,
        ge=0,
        le=1,
        description="Evidence overlap (of the smaller) of two patterns merged as near-duplicates.",
    )
    growth_min: int = Field(
        10, ge=0, le=10_000, description="Evidence one pattern may gain per cycle, at least."
    )
    growth_share: float = Field(
        0.5,
        ge=0,
        le=10,
        description="Evidence one pattern may gain per cycle, as a share of what it has.",
    )
    max_evidence: int = Field(500, ge=2, le=100_000, description="Evidence kept per pattern.")
    max_patterns: int = Field(
        200, ge=1, le=100_000, description="Active patterns at most (the weakest are archived)."
    )
    max_principles: int = Field(50, ge=1, le=10_000, description="Active principles at most.")
    max_axioms: int = Field(10, ge=1, le=1000, description="Active axioms at most.")
    max_new_per_cycle: int = Field(
        20, ge=0, le=10_000, description="Abstractions created per level per cycle at most."
    )
    archived_matched: int = Field(
        200,
        ge=0,
        le=100_000,
        description="Most recently archived abstractions a new cluster may revive.",
    )
    min_shared_concepts: int = Field(
        1, ge=1, le=10, description="Concepts two patterns (principles) share to be grouped."
    )
    strength_k: float = Field(
        8.0, gt=0, le=10_000, description="Strength = 1 - exp(-live evidence / strength_k)."
    )
    strength_half_life_days: float = Field(
        30.0, gt=0, description="Strength halves after this long without new evidence."
    )
    demote_below: float = Field(
        0.5, ge=0, le=1, description="Grounding (share of live evidence) below which it is demoted."
    )
    archive_below: float = Field(
        0.2, ge=0, le=1, description="Grounding below which a demoted abstraction is archived."
    )
    demoted_archive_days: float = Field(
        30.0, gt=0, description="A demoted abstraction not recovered after this long is archived."
    )
    llm_describe: bool = Field(
        True, description="Let the LLM (when configured) title and describe new abstractions."
    )
    llm_max_per_cycle: int = Field(
        10, ge=0, le=1000, description="LLM descriptions per cycle at most."
    )
    llm_evidence: int = Field(
        8, ge=1, le=100, description="Evidence summaries (or child titles) shown to the LLM."
    )
    title_max_chars: int = Field(80, ge=20, le=500, description="Longest abstraction title.")
    description_max_chars: int = Field(
        300, ge=50, le=5000, description="Longest abstraction description."
    )


class MetacognitionConfig(_Section):
    enabled: bool = Field(True, description="Run the metacognition agent on its schedule.")
    interval_s: float = Field(
        6 * 3600.0, gt=0, description="How often metacognition audits the store (seconds)."
    )
    min_memories: int = Field(
        50, ge=1, description="Fewest memories for the ratio audits (skew, dead ratio) to judge."
    )
    unembedded_warning: float = Field(
        0.02, ge=0, le=1, description="Share of live memories without a vector: warning."
    )
    unembedded_alert: float = Field(0.1, ge=0, le=1, description="... and alert.")
    source_skew_warning: float = Field(
        0.9, ge=0, le=1, description="Share of live memories from the largest source: warning."
    )
    source_skew_alert: float = Field(0.98, ge=0, le=1, description="... and alert.")
    dead_ratio_warning: float = Field(
        0.5, ge=0, le=1, description="Share of memories archived or merged: warning."
    )
    dead_ratio_alert: float = Field(0.75, ge=0, le=1, description="... and alert.")
    stale_consolidation_warning_s: float = Field(
        86400.0, gt=0, description="Seconds since the last consolidation: warning."
    )
    stale_consolidation_alert_s: float = Field(3 * 86400.0, gt=0, description="... and alert.")
    feedback_window_s: float = Field(
        7 * 86400.0, gt=0, description="Window of the feedback audit and of suppression."
    )
    feedback_min_ratings: int = Field(
        10, ge=1, description="Fewest ratings in the window for the feedback audit to judge."
    )
    irrelevant_warning: float = Field(
        0.3, ge=0, le=1, description="Share of ratings that said irrelevant: warning."
    )
    irrelevant_alert: float = Field(0.5, ge=0, le=1, description="... and alert.")
    store_size_warning_bytes: int = Field(
        1 << 30, ge=1, description="Database size (with WAL) in bytes: warning."
    )
    store_size_alert_bytes: int = Field(4 << 30, ge=1, description="... and alert.")
    self_test_patterns: int = Field(
        10, ge=0, le=1000, description="Patterns probed per recall self-test."
    )
    self_test_memories: int = Field(
        20, ge=0, le=1000, description="Memories probed per recall self-test (rotating)."
    )
    self_test_k: int = Field(10, ge=1, le=100, description="A probe hits if recall's top k has it.")
    self_test_warning: float = Field(
        0.8, ge=0, le=1, description="Self-test hit rate at or below this: warning."
    )
    self_test_alert: float = Field(0.6, ge=0, le=1, description="... and alert (lower is worse).")
    self_test_llm_questions: int = Field(
        5, ge=0, le=1000, description="Probe questions an LLM may write per self-test (grounded)."
    )
    reembed: bool = Field(True, description="Queue memories lacking a vector to the encoder.")
    suppress_after: int = Field(
        3,
        ge=0,
        description="Irrelevant ratings in the window before a memory is suppressed (0: never).",
    )
    suppress_factor: float = Field(
        0.5, gt=0, lt=1, description="A suppressed memory's utility is multiplied by this."
    )
    suppress_floor: float = Field(
        0.2, gt=0, le=1, description="Suppression never lowers utility below this."
    )
    suppress_per_cycle: int = Field(20, ge=0, description="Memories suppressed per cycle at most.")
    request_consolidation: bool = Field(
        True, description="Ask for a consolidation when the dead ratio or staleness is high."
    )
    consolidation_cooldown_s: float = Field(
        6 * 3600.0, ge=0, description="Least time between two such requests."
    )
    keep_per_kind: int = Field(
        1000, ge=1, description="Observations kept per kind (older ones are trimmed)."
    )

    @field_validator(
        "unembedded_alert", "source_skew_alert", "dead_ratio_alert",
        "stale_consolidation_alert_s", "irrelevant_alert", "store_size_alert_bytes",
    )  # fmt: skip
    @classmethod
    def _alert_not_milder(cls, value: float, info: Any) -> float:
        warning = info.data.get(info.field_name.replace("alert", "warning"))
        if warning is not None and value < warning:
            raise ValueError(f"must be at least the warning level ({warning})")
        return value

    @field_validator("self_test_alert")
    @classmethod
    def _hit_rate_alert(cls, value: float, info: Any) -> float:
        warning = info.data.get("self_test_warning")
        if warning is not None and value > warning:
            raise ValueError(f"must be at most self_test_warning ({warning}): lower is worse")
        return value


class OrchestratorConfig(_Section):
    enabled: bool = Field(True, description="Watch agents, the LLM and the store.")
    interval_s: float = Field(
        300.0, gt=0, description="How often the orchestrator looks (seconds)."
    )
    self_test_interval_s: float = Field(
        86400.0, ge=0, description="How often it runs the recall self-test (0: never)."
    )


class AgentsConfig(_Section):
    restart_initial_s: float = Field(
        1.0, gt=0, description="First restart delay of a crashed agent."
    )
    restart_max_s: float = Field(60.0, gt=0, description="Longest restart delay (doubling).")
    stop_timeout_s: float = Field(
        1.5, gt=0, description="How long each agent gets to stop before shutdown moves on."
    )
    heap_trim_interval_s: float = Field(
        30.0,
        ge=0,
        description="How often freed memory is handed back to the system (glibc only; 0: never).",
    )
    loop_stall_threshold_s: float = Field(
        0.25,
        gt=0,
        le=60,
        description="An event-loop stall longer than this is logged and counted (/metrics).",
    )
    gil_switch_interval_ms: float = Field(
        1.0,
        gt=0,
        le=100,
        description=(
            "How long a busy worker thread may hold Python's lock before the event loop "
            "gets it back (sys.setswitchinterval; Python's own default is 5)."
        ),
    )


def _builtin_reactor_rules() -> list[dict[str, Any]]:
    from mnemonic.reactor.rules import BUILTIN_RULES

    return [dict(rule) for rule in BUILTIN_RULES]


class McpConfig(_Section):
    autostart: bool = Field(
        False,
        description="mnemonic mcp (stdio) starts the daemon when it is not running, instead"
        " of answering with the command that starts it.",
    )
    autostart_timeout_s: float = Field(
        60.0, gt=0, le=600, description="How long mnemonic mcp waits for a daemon it started."
    )
    request_timeout_s: float = Field(
        30.0, gt=0, le=600, description="Timeout of one REST call the MCP tools make."
    )
    context_limit: int = Field(
        8, ge=1, le=50, description="Memories get_context returns by default."
    )
    usage_retention_days: float = Field(
        90.0, gt=0, description="Tool usage rows older than this are dropped."
    )


class ReactorConfig(_Section):
    enabled: bool = Field(True, description="Start agents when events match the rules below.")
    rules: list[dict[str, Any]] = Field(
        default_factory=_builtin_reactor_rules,
        description="Rules (setting this replaces the built-ins): name; on: an event type;"
        " when: {field: value | [values] | {eq|ne|in|not_in|gt|gte|lt|lte|exists: x}},"
        " detail.key for a key of a mapping field; do: {run_agent: NAME}; cooldown_s; enabled.",
    )
    disabled: list[str] = Field(
        default_factory=list,
        description="Names of rules to switch off, e.g. [dream-after-episode].",
    )
    queue_size: int = Field(
        256, ge=1, le=100_000, description="Events waiting for the reactor (oldest dropped above)."
    )

    @field_validator("rules", mode="before")
    @classmethod
    def _on_key(cls, value: Any) -> Any:
        from mnemonic.reactor.rules import normalise_keys

        return [normalise_keys(v) for v in value] if isinstance(value, list) else value

    @field_validator("rules")
    @classmethod
    def _valid_rules(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from mnemonic.reactor.rules import parse_rules

        parse_rules(value)  # RuleError names the rule and what is wrong with it
        return value

    @field_validator("disabled")
    @classmethod
    def _known_rules(cls, value: list[str], info: Any) -> list[str]:
        from mnemonic.reactor.rules import parse_rules

        if "rules" in info.data:  # else the rules failed already, and said why
            parse_rules(info.data["rules"], value)  # a name that matches no rule is refused
        return value


# Perception: watchers and the heuristic filter (issue 4).

# fmt: off
DEFAULT_TRIVIAL = (
    "ls", "ls *", "ll", "ll *", "la", "la *", "l", "l *", "dir", "cd", "cd *", "pwd",
    "clear", "cls", "reset", "exit", "logout", "history", "history *", "fg", "fg *",
    "bg", "bg *", "jobs", "..", "...", "whoami", "date", "true",
    "git status", "git st", "git diff", "git log", "git branch",
)
# fmt: on

DEFAULT_KEYWORDS: dict[str, float] = {
    "error": 0.15,
    "errors": 0.15,
    "failed": 0.15,
    "failure": 0.15,
    "failing": 0.1,
    "exception": 0.15,
    "traceback": 0.15,
    "panic": 0.15,
    "fatal": 0.15,
    "crash": 0.15,
    "todo": 0.1,
    "fixme": 0.1,
    "decision": 0.2,
    "decided": 0.2,
    "decide": 0.1,
    "because": 0.1,
    "fixed": 0.15,
    "fix": 0.1,
    "bug": 0.1,
    "workaround": 0.15,
    "root cause": 0.2,
    "regression": 0.15,
    "turns out": 0.15,
    "learned": 0.1,
    "important": 0.1,
    "remember": 0.1,
}


class FilesystemWatcherConfig(_Section):
    enabled: bool = Field(True, description="Watch the roots below (nothing happens without).")
    roots: tuple[str, ...] = Field(
        (),
        description="Folders to watch recursively (~ accepted). Refused: /, the home folder "
        "itself or above it, and anything in ~/.ssh, ~/.aws, ~/.gnupg.",
    )
    ignore: tuple[str, ...] = Field(
        (),
        description="Extra ignore patterns in .gitignore syntax, relative to each root; "
        "they win over the defaults ('!build/' watches build folders again).",
    )
    use_default_ignores: bool = Field(
        True,
        description="Skip .git, node_modules, virtualenvs, build and cache folders, lockfiles "
        "and editor swap files.",
    )
    respect_gitignore: bool = Field(True, description="Skip what .gitignore files exclude.")
    max_file_bytes: int = Field(
        100 * 1024, ge=0, description="Larger files give metadata-only events."
    )
    debounce_s: float = Field(
        1.0, gt=0, description="Quiet time per path before an event (save bursts coalesce)."
    )
    max_delay_s: float = Field(
        10.0, gt=0, description="A path that never goes quiet is still reported this often."
    )
    reconcile_interval_s: float = Field(
        300.0, gt=0, description="Walk every root this often to catch what inotify missed."
    )
    poll_interval_s: float = Field(
        60.0, gt=0, description="Walk interval for roots inotify cannot watch (limits hit)."
    )
    max_pending: int = Field(
        10_000, ge=100, description="Distinct paths waiting for their debounce (then rescan)."
    )
    max_index_files: int = Field(
        200_000, ge=1, description="Files remembered per root for reconciliation."
    )
    batch_size: int = Field(256, ge=1, description="Paths read per worker-thread hand-off.")
    initial_index_max_files: int = Field(
        200,
        ge=0,
        description="Existing files read when a root is watched for the first time "
        "(README, notes and docs first; 0 = only record them).",
    )
    log_patterns: tuple[str, ...] = Field(
        ("*.log",),
        description="File-name globs of logs: only what was appended is read (log_appended).",
    )
    log_tail_bytes: int = Field(
        8192, ge=256, description="Most bytes of a log's new tail read at once (the newest)."
    )
    log_min_interval_s: float = Field(
        30.0,
        ge=0,
        description="Least time between two reads of one log (what a busy log writes "
        "meanwhile is read next time, not lost).",
    )


class ShellHistoryConfig(_Section):
    enabled: bool = Field(True, description="Watch shell history files for new commands.")
    files: list[str] = Field(
        default_factory=list,
        description="History files to watch (~ allowed); empty = $HISTFILE, ~/.bash_history, "
        "~/.zsh_history, ~/.zhistory and fish's fish_history, whichever exist.",
    )
    poll_interval_s: float = Field(2.0, gt=0, description="How often the files are checked.")
    initial_entries: int = Field(
        200,
        ge=0,
        le=10000,
        description="Commands imported from the end of a file seen for the first time "
        "(0 = only commands written after that).",
    )
    ignore_space: bool = Field(
        True, description="Skip commands that start with a space (HISTCONTROL=ignorespace)."
    )
    histignore: str = Field(
        "", description="Colon-separated globs of commands to skip, as bash's HISTIGNORE."
    )
    use_env_histignore: bool = Field(
        True, description="Also apply $HISTIGNORE when the daemon's environment has it."
    )
    trivial_commands: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TRIVIAL),
        description="Globs of simple commands (no pipes, chaining or redirection) skipped "
        "as trivial.",
    )
    max_command_bytes: int = Field(
        16 * 1024, ge=256, description="Longer commands are dropped as too_large."
    )
    max_read_bytes: int = Field(
        1024 * 1024, ge=4096, description="Bytes read from one file per poll (work bound)."
    )
    hook_dedupe_window_s: float = Field(
        86400.0,
        gt=0,
        description="A history-file command the shell hook recorded this close in time is "
        "not told again (bash writes its history file only at exit).",
    )
    hook_hold_s: float = Field(
        300.0,
        ge=0,
        description="While the shell hook is in use, history-file commands wait this long "
        "for the hook's record of them (zsh writes history before the command ends).",
    )


class ClipboardConfig(_Section):
    enabled: bool = Field(False, description="Watch the clipboard for copied text.")
    poll_interval_s: float = Field(1.0, gt=0, description="How often the clipboard is read.")
    max_bytes: int = Field(
        32 * 1024, ge=64, description="Larger text (UTF-8 bytes) is dropped as too_large."
    )
    ignore_bare_urls: bool = Field(
        True, description="Drop text that is a single URL and nothing else (bare_url)."
    )
    concealed_markers: list[str] = Field(
        default_factory=lambda: [
            "x-kde-passwordManagerHint",
            "org.nspasteboard.ConcealedType",
            "org.nspasteboard.TransientType",
            "ExcludeClipboardContentFromMonitorProcessing",
        ],
        description="Clipboard targets/types that mark content as secret or not to record.",
    )
    denied_apps: list[str] = Field(
        default_factory=lambda: [
            "1password",
            "bitwarden",
            "keepass",
            "lastpass",
            "dashlane",
            "enpass",
            "keeper",
            "nordpass",
            "protonpass",
            "com.apple.keychainaccess",
            "com.apple.passwords",
        ],
        description="Source apps (case-insensitive substrings of the app id) whose copies "
        "are dropped; the source is known on macOS only (org.nspasteboard.source).",
    )
    probe_timeout_s: float = Field(
        2.0, gt=0, description="Timeout of one xclip/wl-paste/osascript call."
    )


class GitConfig(_Section):
    enabled: bool = Field(True, description="Watch git repositories for commits and switches.")
    roots: list[str] = Field(
        default_factory=lambda: ["~"],
        description="Folders searched for repositories (~ allowed); hidden, dependency and "
        "build folders are skipped.",
    )
    max_depth: int = Field(
        3, ge=0, le=10, description="Folder levels below a root searched for repositories."
    )
    ignore_dirs: list[str] = Field(
        default_factory=list, description="More folder names never searched for repositories."
    )
    max_repos: int = Field(500, ge=1, description="Repositories watched at most.")
    git_binary: str = Field("git", description="The git executable (a name on PATH or a path).")
    poll_interval_s: float = Field(
        2.0, gt=0, description="How often each repository's HEAD and reflog are checked."
    )
    rediscover_interval_s: float = Field(
        300.0, gt=0, description="How often the roots are searched again for new repositories."
    )
    max_commits_per_poll: int = Field(
        20,
        ge=1,
        le=1000,
        description="Commit events per repository per poll; older commits "
        "of the same burst become one commit_batch event.",
    )
    max_files_listed: int = Field(
        20,
        ge=1,
        le=1000,
        description="Changed paths named in an event; larger changes are "
        "summarised as counts and their busiest folders.",
    )
    max_line_count_files: int = Field(
        2000,
        ge=0,
        description="Line totals (+/-) are counted only for changes of at most "
        "this many files (counting reads every changed file).",
    )
    max_message_chars: int = Field(
        4000, ge=0, description="Commit message body kept in a commit event."
    )
    worktree_changes: bool = Field(
        True, description="Emit worktree_changed events for uncommitted changes."
    )
    worktree_interval_s: float = Field(
        60.0, gt=0, description="Least time between two git status runs of one repository."
    )
    worktree_min_gap_s: float = Field(
        120.0, ge=0, description="Least time between two worktree_changed events of a repository."
    )
    status_cpu_budget: float = Field(
        0.005, gt=0, le=1, description="Share of one core all git status runs may use together."
    )
    command_timeout_s: float = Field(30.0, gt=0, description="A git command is killed after this.")
    max_reflog_bytes: int = Field(
        256 * 1024, ge=4096, description="Reflog bytes read per repository per poll."
    )
    initial_commits: int = Field(
        3,
        ge=0,
        le=100,
        description="Commits of its current branch imported when a repository is seen for "
        "the first time (no saved state), only those younger than initial_max_age_days.",
    )
    initial_max_age_days: float = Field(
        7.0, gt=0, description="Age limit of the commits imported on first sight."
    )
    new_repo_checks_per_poll: int = Field(
        500,
        ge=0,
        description="Folders listed by discovery whose mtime is checked per poll, so a new "
        "repository is found within seconds (0 = only every rediscover_interval_s).",
    )


class FilterConfig(_Section):
    min_chars: int = Field(3, ge=0, description="Shorter texts are dropped as too_short.")
    max_chars: int = Field(
        100_000, ge=1, description="Longer texts are dropped as too_long (watchers cap first)."
    )
    deny_patterns: list[str] = Field(
        default_factory=list,
        description="Regular expressions; an event whose text matches one is dropped.",
    )
    deny_paths: list[str] = Field(
        default_factory=lambda: ["*.min.js", "*.min.css", "*.map"],
        description="Globs (~ allowed); an event whose path matches one is dropped. A glob "
        "without / matches the file name.",
    )
    frequency_max: int = Field(
        3, ge=0, description="The same content is kept at most this often per window (0 = off)."
    )
    frequency_window_s: float = Field(
        600.0, gt=0, description="The window of the frequency limit, in seconds."
    )
    frequency_max_keys: int = Field(
        10_000, ge=16, description="Distinct contents the frequency limit remembers."
    )
    min_score: float = Field(
        0.3, ge=0, le=1, description="Content score an event needs, unless its source has one."
    )
    min_score_by_source: dict[str, float] = Field(
        default_factory=lambda: {
            "terminal": 0.3,
            "filesystem": 0.3,
            "clipboard": 0.4,
            "git": 0.1,
            "git:worktree_changed": 0.3,
            "filesystem:log_appended": 0.6,
        },
        description="Content score needed per watcher, or per watcher:kind.",
    )
    keywords: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_KEYWORDS),
        description="Words (whole, case-insensitive) that raise the score, with their weight.",
    )
    keyword_cap: float = Field(0.4, ge=0, le=1, description="Most that keywords add in all.")
    score_max_chars: int = Field(
        20_000, ge=100, description="Characters of a text that are scored (bounds the cost)."
    )
    auto_exclude_per_hour: int = Field(
        30, ge=0, description="Rejections per hour that exclude a path at runtime (0 = off)."
    )
    auto_exclude_watchers: list[str] = Field(
        default_factory=lambda: ["filesystem"],
        description="Watchers whose paths may be excluded automatically.",
    )
    auto_exclude_min_files: int = Field(
        3, ge=1, description="Different rejected files a folder needs before it is excluded."
    )

    @field_validator("deny_patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from exc
        return patterns


class ProjectSpec(_Section):
    name: str = Field(..., min_length=1, description="The project's name in memories.")
    paths: list[str] = Field(
        default_factory=list, description="Folders of the project (~ allowed)."
    )
    aliases: list[str] = Field(
        default_factory=list,
        description="Other names that mean this project (repository or folder names).",
    )


class PerceptionConfig(_Section):
    queue_size: int = Field(
        4096, ge=16, description="Watcher events waiting for the filter (oldest dropped above)."
    )
    projects: list[ProjectSpec] = Field(
        default_factory=list,
        description="Known projects: name, paths and aliases, e.g. [{name: mnemonic, "
        "paths: [~/src/mnemonic], aliases: [mn]}]. Else the git root's name, else the folder's.",
    )


class LoggingConfig(_Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="Log level; memory content is only logged at DEBUG."
    )


class Config(BaseSettings):
    """The whole configuration; one instance is built by the composition root."""

    model_config = SettingsConfigDict(
        env_prefix="MNEMONIC_", env_nested_delimiter="__", extra="forbid", frozen=True
    )

    server: ServerConfig = Field(default_factory=ServerConfig, description="The local HTTP server.")
    storage: StorageConfig = Field(default_factory=StorageConfig, description="The SQLite store.")
    embedding: EmbeddingConfig = Field(
        default_factory=EmbeddingConfig, description="How text becomes vectors."
    )
    llm: LlmConfig = Field(
        default_factory=LlmConfig, description="The LLM used for judgments (optional)."
    )
    encoding: EncodingConfig = Field(
        default_factory=EncodingConfig, description="Raw observation -> memory, dedup and linking."
    )
    recall: RecallConfig = Field(
        default_factory=RecallConfig,
        description="Retrieval: entry points, spreading activation, ranking, diversity.",
    )
    feedback: FeedbackConfig = Field(
        default_factory=FeedbackConfig, description="How ratings move utility and link strengths."
    )
    events: EventsConfig = Field(
        default_factory=EventsConfig, description="The in-process event bus."
    )
    websocket: WebSocketConfig = Field(
        default_factory=WebSocketConfig, description="The /ws event stream."
    )
    agents: AgentsConfig = Field(
        default_factory=AgentsConfig, description="Supervision of background agents."
    )
    consolidation: ConsolidationConfig = Field(
        default_factory=ConsolidationConfig,
        description="Decay, link pruning and merging of near-duplicates (background).",
    )
    episodes: EpisodesConfig = Field(
        default_factory=EpisodesConfig,
        description="Episodes: memories grouped into stretches of work per project.",
    )
    dreaming: DreamingConfig = Field(
        default_factory=DreamingConfig,
        description="Dreaming: replay, link strengthening, cross-episode links, insights.",
    )
    supersession: SupersessionConfig = Field(
        default_factory=SupersessionConfig, description="Which memories replace which."
    )
    enrichment: EnrichmentConfig = Field(
        default_factory=EnrichmentConfig,
        description="LLM-aware encoding of memories after they were stored (background).",
    )
    abstraction: AbstractionConfig = Field(
        default_factory=AbstractionConfig,
        description="Patterns, principles and axioms over memories (background).",
    )
    metacognition: MetacognitionConfig = Field(
        default_factory=MetacognitionConfig,
        description="Audits of the store and recall (thresholds, self-test, bounded actions).",
    )
    orchestrator: OrchestratorConfig = Field(
        default_factory=OrchestratorConfig,
        description="Watches agents, the LLM and the store; schedules the recall self-test.",
    )
    reactor: ReactorConfig = Field(
        default_factory=ReactorConfig,
        description="Rules that start agents when events happen (event, condition, cooldown).",
    )
    mcp: McpConfig = Field(
        default_factory=McpConfig,
        description="The MCP server (/mcp over HTTP and mnemonic mcp over stdio).",
    )
    perception: PerceptionConfig = Field(
        default_factory=PerceptionConfig, description="Watcher events -> filter -> memories."
    )
    filter: FilterConfig = Field(
        default_factory=FilterConfig,
        description="The heuristic filter: what watcher events are worth remembering.",
    )
    filesystem: FilesystemWatcherConfig = Field(
        default_factory=FilesystemWatcherConfig,
        description="The filesystem watcher (nothing is watched until roots are set).",
    )
    shell_history: ShellHistoryConfig = Field(
        default_factory=ShellHistoryConfig, description="The shell history watcher."
    )
    clipboard: ClipboardConfig = Field(
        default_factory=ClipboardConfig, description="The clipboard watcher (off by default)."
    )
    git: GitConfig = Field(default_factory=GitConfig, description="The git watcher.")
    logging: LoggingConfig = Field(
        default_factory=LoggingConfig, description="Logs (stderr and the log folder)."
    )


def _yaml_values(path: Path) -> dict[str, Any]:
    data = load_bounded(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def load_config(path: Path | None = None, **overrides: Any) -> Config:
    """Build the config from ``path`` (optional YAML), the environment and ``overrides``.

    Short aliases such as ``MNEMONIC_PORT`` are not read here: the CLI turns them into
    overrides (``mnemonic.config_sources.alias_overrides``) so that they rank like flags.
    """
    yaml_file = path if path is not None and path.exists() else None
    # read with bounds (an alias bomb hung start-up); pydantic-settings' own YAML source
    # would call yaml.safe_load on the file
    file_values = _yaml_values(yaml_file) if yaml_file is not None else {}

    class _Bound(Config):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
            if file_values:
                sources.append(InitSettingsSource(settings_cls, init_kwargs=file_values))
            return tuple(sources)

    return _Bound(**overrides)


def render_default_yaml() -> str:
    """The commented default ``config.yaml``: every key, its default and what it does."""
    lines = [
        "# mnemonic configuration. Every key is shown with its default.",
        "# Environment variables override this file: MNEMONIC_<SECTION>__<KEY>, e.g.",
        "# MNEMONIC_SERVER__PORT=9998 (MNEMONIC_PORT is a short form of that one).",
    ]
    defaults = Config.model_construct()
    for section_name, section_field in Config.model_fields.items():
        section = getattr(defaults, section_name)
        if not isinstance(section, BaseModel):  # pragma: no cover - all fields are sections
            continue
        lines.append("")
        lines.append(f"{section_name}:  # {section_field.description or section_name}")
        for key, info in type(section).model_fields.items():
            value = getattr(section, key)
            comment = info.description or ""
            if isinstance(value, tuple):
                value = list(value)
            if isinstance(value, dict | list):
                lines.append(f"  # {comment}")
                dumped = yaml.safe_dump({key: value}, sort_keys=False, default_flow_style=False)
                lines.extend("  " + row for row in dumped.rstrip().splitlines())
            else:
                scalar = yaml.safe_dump(value, default_flow_style=True).strip()
                scalar = scalar.removesuffix("\n...").removesuffix("...").strip()
                lines.append(f"  {key}: {scalar}  # {comment}")
    return "\n".join(lines) + "\n"


TEMPLATE_HEADER = """\
# mnemonic configuration. Nothing is set here yet: every setting below is commented out
# and has its built-in default, so a newer mnemonic's better default reaches you.
# To change a setting, uncomment it together with its section line, for example
#
#   server:
#     port: 9998
#
# 'mnemonic config show' lists the effective settings and where each one came from;
# 'mnemonic config default' prints this reference again.
# Environment variables override this file: MNEMONIC_<SECTION>__<KEY>, e.g.
# MNEMONIC_SERVER__PORT=9998 (MNEMONIC_PORT is a short form of that one).
"""


def render_template_yaml() -> str:
    """The ``config.yaml`` written on first start: the reference, all commented out.

    A file that set every default would pin them: ``config show`` would call each one
    user-set, and an improved default in a later release would never take effect."""
    body = render_default_yaml().split("\n\n", 1)[1]
    lines = [f"# {line}" if line else "#" for line in body.rstrip("\n").splitlines()]
    return TEMPLATE_HEADER + "#\n" + "\n".join(lines) + "\n"
