"""The no-LLM encoder: raw observation text in, :class:`Encoded` out.

Combines the pure heuristics of this package. An explicit type from the
caller always wins over classification, because the caller knows what the
observation is (an agent saying "remember this decision") and the classifier
only guesses from wording. Significance is computed for the final type.
"""

from __future__ import annotations

from collections.abc import Mapping

from mnemonic.encoding.classify import (
    DEFAULT_SALIENCE,
    classify_type,
    initial_salience,
    significance,
)
from mnemonic.encoding.concepts import extract_concepts
from mnemonic.encoding.summary import extract_summary
from mnemonic.store.models import Encoded, MemoryType


def encode(
    text: str,
    *,
    explicit_type: MemoryType | None = None,
    summary_max_chars: int = 200,
    max_concepts: int = 8,
    salience_table: Mapping[MemoryType, float] = DEFAULT_SALIENCE,
) -> Encoded:
    """Derive summary, concepts, type, significance and salience from ``text``."""
    memory_type = explicit_type if explicit_type is not None else classify_type(text)
    return Encoded(
        summary=extract_summary(text, summary_max_chars),
        concepts=extract_concepts(text, max_concepts),
        type=memory_type,
        significance=significance(text, memory_type),
        salience=initial_salience(memory_type, salience_table),
    )
