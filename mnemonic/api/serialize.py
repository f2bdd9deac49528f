"""Domain records to JSON-ready dicts (no vectors, ever)."""

from __future__ import annotations

from typing import Any

from mnemonic.recall.ranking import Reached, Scored
from mnemonic.store.models import Memory, RawMemory


def memory_json(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.id,
        "content": memory.content,
        "summary": memory.summary,
        "concepts": list(memory.concepts),
        "type": memory.type.value,
        "source": memory.source.value,
        "project": memory.project or None,
        "state": memory.state.value,
        "salience": round(memory.salience, 4),
        "significance": round(memory.significance, 4),
        "utility": round(memory.utility, 4),
        "access_count": memory.access_count,
        "timestamp": memory.timestamp.isoformat(),
        "created_at": memory.created_at.isoformat(),
        "updated_at": memory.updated_at.isoformat(),
        "metadata": memory.metadata,
        "raw_id": memory.raw_id,
        "merged_into": memory.merged_into,
    }


def raw_json(raw: RawMemory) -> dict[str, Any]:
    return {
        "id": raw.id,
        "content": raw.content,
        "source": raw.source.value,
        "type": raw.type.value if raw.type else None,
        "project": raw.project or None,
        "timestamp": raw.timestamp.isoformat(),
        "created_at": raw.created_at.isoformat(),
        "metadata": raw.metadata,
        "status": raw.status.value,
        "memory_id": raw.memory_id,
        "attempts": raw.attempts,
        "error": raw.error,
    }


def result_json(scored: Scored, *, explain: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"memory": memory_json(scored.memory), "score": scored.score}
    if explain:
        sig = scored.signals
        out["explain"] = {
            "contributions": scored.contributions,
            "multiplier": scored.multiplier,
            "direct": sig.direct,
            "spread": sig.spread,
            "fts_rank": sig.fts_rank,
            "vector_rank": sig.vector_rank,
            "clause_rank": sig.clause_rank,
            "cosine": sig.cosine,
            "pattern": (
                {"id": sig.pattern_id, "title": sig.pattern_title, "lift": sig.pattern}
                if sig.pattern_id is not None
                else None
            ),
            "superseded_by": list(scored.superseded_by),
            "supersedes": list(scored.supersedes),
            "archived_fallback": scored.fallback,
            "via": via_json(scored.via),
            "episode": scored.episode,
        }
    return out


VIA_SUMMARY_CHARS = 120


def via_json(via: Reached | None) -> dict[str, Any] | None:
    """The edge spreading activation crossed to reach a result, as recall took it: the
    page draws the path from this (following ``from`` through the other results) with no
    request per result. The source's first line lets it name a memory outside the results."""
    if via is None:
        return None
    source = via.source
    line = (source.summary or source.content).strip().split("\n", 1)[0]
    if len(line) > VIA_SUMMARY_CHARS:
        line = line[: VIA_SUMMARY_CHARS - 1] + "\u2026"
    return {
        "from": source.id,
        "from_summary": line,
        "relation": via.relation,
        "strength": round(via.strength, 4),
        "hop": via.hop,
    }
