"""One typed configuration model, a section per component.

Precedence: explicit overrides (CLI flags) > ``MNEMONIC_*`` environment > ``config.yaml`` >
defaults. Every field has a description; ``render_default_yaml`` turns them into the
commented ``config.yaml`` that the repository ships and the daemon writes on first start,
so the documentation cannot drift from the model (a test compares them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)


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
    max_tokens: int = Field(256, ge=16, le=512, description="Tokens kept per text.")
    timeout_s: float = Field(30.0, gt=0, description="Timeout of one endpoint request.")


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
    fts_weight: float = Field(1.3, ge=0, description="Weight of the full-text ranking in fusion.")
    vector_weight: float = Field(1.0, ge=0, description="Weight of the vector ranking in fusion.")
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
        default_factory=lambda: {
            "similar": 0.3,
            "temporal": 1.0,
            "reinforces": 0.5,
            "contradicts": 0.3,
            "caused_by": 0.8,
            "part_of": 0.7,
            "supersedes": 0.6,
        },
        description="How well each relation type carries activation.",
    )
    recency_weight: float = Field(0.05, ge=0, le=1, description="Boost share for recent memories.")
    recency_half_life_days: float = Field(30.0, gt=0, description="Half-life of the boost.")
    salience_weight: float = Field(0.1, ge=0, le=1, description="Boost share for salience.")
    significance_weight: float = Field(
        0.05, ge=0, le=1, description="Boost share for significance."
    )
    type_weights: dict[str, float] = Field(
        default_factory=lambda: {
            "decision": 1.0,
            "error": 1.0,
            "insight": 1.0,
            "learning": 1.0,
            "general": 1.0,
            "handoff": 1.0,
        },
        description="Multiplier by memory type.",
    )
    source_weights: dict[str, float] = Field(
        default_factory=lambda: {
            "api": 1.0,
            "mcp": 1.0,
            "terminal": 1.0,
            "filesystem": 1.0,
            "clipboard": 1.0,
            "git": 1.0,
            "user": 1.0,
            "ingest": 1.0,
        },
        description="Multiplier by memory source.",
    )
    mmr_lambda: float = Field(
        0.8, ge=0, le=1, description="MMR relevance share (1 = no diversification)."
    )
    mmr_pool: int = Field(50, ge=1, le=1000, description="Ranked candidates MMR chooses from.")
    default_states: list[str] = Field(
        default_factory=lambda: ["active", "fading"], description="States recalled by default."
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


class AgentsConfig(_Section):
    restart_initial_s: float = Field(
        1.0, gt=0, description="First restart delay of a crashed agent."
    )
    restart_max_s: float = Field(60.0, gt=0, description="Longest restart delay (doubling).")
    stop_timeout_s: float = Field(
        1.5, gt=0, description="How long each agent gets to stop before shutdown moves on."
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
    logging: LoggingConfig = Field(
        default_factory=LoggingConfig, description="Logs (stderr and the log folder)."
    )


def load_config(path: Path | None = None, **overrides: Any) -> Config:
    """Build the config from ``path`` (optional YAML), the environment and ``overrides``.

    ``MNEMONIC_PORT`` is honoured as a short form of ``MNEMONIC_SERVER__PORT``.
    """
    yaml_file = path if path is not None and path.exists() else None

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
            if yaml_file is not None:
                sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=yaml_file))
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
            if isinstance(value, dict | list):
                lines.append(f"  # {comment}")
                dumped = yaml.safe_dump({key: value}, sort_keys=False, default_flow_style=False)
                lines.extend("  " + row for row in dumped.rstrip().splitlines())
            else:
                scalar = yaml.safe_dump(value, default_flow_style=True).strip()
                scalar = scalar.removesuffix("\n...").removesuffix("...").strip()
                lines.append(f"  {key}: {scalar}  # {comment}")
    return "\n".join(lines) + "\n"
