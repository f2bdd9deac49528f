"""The passages of a memory: the texts embedded beside its whole content.

Why: one mean-pooled vector of a many-sentence memory is an average of several topics,
so a question about one of them finds it far down or not at all. Scoring a memory by
its best passage (MaxP) was measured in one process on both benchmarks
(``bench/chunking.py``, BENCHMARKS.md, session 14): vector-only LongMemEval session
all@5 0.877 -> 0.925 (multi-session 0.741 -> 0.926) and LoCoMo R@10 0.508 -> 0.575.

A passage is one sentence (or, past ``cap`` sentences, a run of adjacent ones) after
the memory's first ``lead_words`` words. The lead carries who or what the memory is
about, which a bare sentence ("They were stoked!") loses: without it LoCoMo lost
0.009 while LongMemEval still gained. A memory of fewer than two sentences has no
passages; its whole vector is its only one.

Linear in the content: one regex split with a fixed look-behind, one ``split``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from mnemonic.llm.embedding import Vectors
from mnemonic.store.vector_rows import VectorModels, vector_models

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
"""Sentence ends (as measured) and paragraph breaks, which end a note's unit too."""
MIN_WORDS = 3  # shorter pieces ("Thanks!", "OK.") carry no topic of their own
SEPARATOR = " … "
SPLITTER = 1
"""The version of how ``passage_texts`` cuts a memory. Raise it with any change to what
it returns for some content: the passage rows' name carries it (``vector_models``), so
the next start re-embeds the passages that the old splitter cut."""


def row_models(model: str, lead_words: int, cap: int) -> VectorModels:
    """What the vector rows of ``model`` cut by this splitter with ``lead_words`` and
    ``cap`` record (``store/vector_rows.py``): every path that writes or checks rows names
    them here, so none can name another splitter version."""
    return vector_models(model, lead_words, cap, splitter=SPLITTER)


def sentences(content: str) -> list[str]:
    """The sentences of ``content`` with at least ``MIN_WORDS`` words each."""
    parts = (p.strip() for p in _SENTENCE_END.split(content.strip()))
    return [p for p in parts if len(p.split(maxsplit=MIN_WORDS)) >= MIN_WORDS]


def passage_texts(content: str, lead_words: int, cap: int) -> list[str]:
    """The texts to embed for ``content`` besides the whole: at most ``cap``, none for a
    memory of fewer than two sentences, each led by its first ``lead_words`` words."""
    if cap < 1:
        return []
    parts = sentences(content)
    if len(parts) < 2:
        return []
    if len(parts) > cap:
        # runs of adjacent sentences, as even as possible, so the cap covers the whole text
        size, extra = divmod(len(parts), cap)
        runs: list[str] = []
        start = 0
        for i in range(cap):
            end = start + size + (1 if i < extra else 0)
            runs.append(" ".join(parts[start:end]))
            start = end
        parts = runs
    lead = " ".join(content.split(maxsplit=lead_words)[:lead_words]) if lead_words else ""
    if not lead:
        return parts
    return [p if p.startswith(lead) else f"{lead}{SEPARATOR}{p}" for p in parts]


def embed_with_passages(
    embed: Callable[[list[str]], Vectors],
    contents: Sequence[str],
    lead_words: int,
    cap: int,
) -> tuple[Vectors, list[Vectors]]:
    """Whole vectors of ``contents`` and each one's passage vectors ([n, dim], n >= 0),
    from one ``embed`` call, so a batch pays the model's per-call cost once."""
    texts = list(contents)
    owned = [passage_texts(content, lead_words, cap) for content in texts]
    matrix = embed(texts + [p for mine in owned for p in mine])
    return matrix[: len(texts)], _split(matrix, len(texts), owned)


def embed_passages(
    embed: Callable[[list[str]], Vectors],
    contents: Sequence[str],
    lead_words: int,
    cap: int,
    dim: int,
) -> list[Vectors]:
    """Only the passage vectors of ``contents`` (a backfill for memories whose whole
    vector is current: half the model's work of embedding both again)."""
    owned = [passage_texts(content, lead_words, cap) for content in contents]
    wanted = [p for mine in owned for p in mine]
    matrix = embed(wanted) if wanted else np.zeros((0, dim), dtype=np.float32)
    return _split(matrix, 0, owned)


def _split(matrix: Vectors, at: int, owned: list[list[str]]) -> list[Vectors]:
    passages: list[Vectors] = []
    for mine in owned:
        passages.append(matrix[at : at + len(mine)])
        at += len(mine)
    return passages
