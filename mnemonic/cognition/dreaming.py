"""What the dreamer judges (pure): which memories to replay, how co-activation moves link
strengths, which memories sharing rare terms deserve a ``related`` link, and which
recurring co-occurrences become insights.

Everything here is a plain function of arrays and numbers (no SQL, no clock), vectorised
where it runs over the whole store, so a cycle at 100k memories takes seconds:

* **Terms** are a memory's concepts and entities, case-folded. Their *document frequency*
  (how many live memories hold them) gives an idf normalised by ``ln N``: 1 for a term in
  one memory, 0 for a term in every memory, so thresholds mean the same at 100 memories
  and at a million. A term in more than ``max_df_share`` of the memories (or more than
  ``max_term_df``, which also bounds the work) links nothing.
* **Cross-episode links** join memories that share usable terms but sit in different
  episodes (a memory outside any episode counts as its own). Evidence is the sum of the
  shared terms' normalised idf; strength ``1 - exp(-evidence)`` capped by
  ``max_link_strength``. Caps per memory (counting the links it already has) and per cycle.
* **Strengthening** is bounded Hebbian: ``s += eta * (ceiling - s)`` per co-activation, so
  a strength never passes the ceiling (at most 1) and never drops.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import chain, islice
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemonic.distinct import distinct_count
from mnemonic.encoding.llm_encode import unsupported_claims
from mnemonic.llm.completion.base import CompletionRequest

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]

# links the dreamer never strengthens: direction and disagreement are not co-activation
FIXED_RELATIONS = frozenset({"supersedes", "contradicts"})


@dataclass(frozen=True, slots=True)
class LinkParams:
    max_df_share: float = 0.02
    max_term_df: int = 50
    min_shared_idf: float = 0.6
    max_link_strength: float = 0.8
    max_related_per_memory: int = 5
    max_links_per_cycle: int = 1000


# ---- replay ------------------------------------------------------------------------------


def pick_replay(seqs: Ints, salience: Floats, batch: int) -> Ints:
    """The ``batch`` most salient of a window of memories (ties: older first), in seq order."""
    if batch <= 0 or len(seqs) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((seqs, -salience))[:batch]
    return np.sort(seqs[order])


# ---- strengthening ---------------------------------------------------------------------


def strengthen(strength: Floats, steps: Ints | Floats, eta: float, ceiling: float) -> Floats:
    """Each strength after ``steps`` bounded Hebbian increments toward ``ceiling``; a
    strength already at or above the ceiling is left as it is (never lowered)."""
    s = np.asarray(strength, dtype=np.float64)
    k = np.maximum(np.asarray(steps, dtype=np.float64), 0.0)
    grown = ceiling - (ceiling - s) * (1.0 - eta) ** k
    return np.clip(np.where(s >= ceiling, s, grown), 0.0, 1.0)


def coretrieved(
    results: Iterable[Sequence[int]],
    helpful: Iterable[Iterable[int]] = (),
    irrelevant: Iterable[int] = (),
    *,
    top: int = 5,
    helpful_weight: int = 2,
) -> Counter[tuple[int, int]]:
    """Co-activation steps per unordered pair ``(low, high)``: one per recall that returned
    both among its ``top`` results, ``helpful_weight`` per helpful rating naming both; a
    memory rated irrelevant co-activates nothing."""
    banned = set(irrelevant)
    steps: Counter[tuple[int, int]] = Counter()
    for result in results:
        kept = [s for s in dict.fromkeys(result[:top]) if s not in banned]
        steps.update(_pairs(kept))
    for rated in helpful:
        kept = [s for s in dict.fromkeys(rated) if s not in banned]
        for pair in _pairs(kept):
            steps[pair] += helpful_weight
    return steps


def _pairs(items: Sequence[int]) -> list[tuple[int, int]]:
    return [(min(a, b), max(a, b)) for i, a in enumerate(items) for b in items[i + 1 :] if a != b]


def neighbourhood_pairs(
    neighbours: Mapping[int, Sequence[int]], links: Iterable[tuple[int, int]]
) -> Counter[tuple[int, int]]:
    """Of ``links`` (pairs, low first), those whose two ends are both neighbours of one
    replayed memory, with how many replayed memories co-activated them."""
    around: dict[int, set[int]] = {}
    for replayed, near in neighbours.items():
        for n in near:
            around.setdefault(n, set()).add(replayed)
    steps: Counter[tuple[int, int]] = Counter()
    for a, b in links:
        shared = around.get(a, set()) & around.get(b, set())
        if shared:
            steps[(a, b)] = len(shared)
    return steps


# ---- the term index ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TermIndex:
    """Memories and their terms as two CSR matrices (memory -> terms, term -> memories)."""

    seq: Ints  # memory index -> seq (ascending)
    episode: Ints  # memory index -> episode code (a memory outside episodes: its own)
    vocab: tuple[str, ...]
    doc_ptr: Ints
    doc_terms: Ints
    post_ptr: Ints
    post_docs: Ints
    df: Ints

    @property
    def n(self) -> int:
        return len(self.seq)

    def terms_of(self, i: int) -> Ints:
        return self.doc_terms[self.doc_ptr[i] : self.doc_ptr[i + 1]]

    def docs_of(self, t: int) -> Ints:
        return self.post_docs[self.post_ptr[t] : self.post_ptr[t + 1]]


def normalise_term(term: str) -> str:
    return " ".join(term.casefold().split())


def build_index(
    seqs: Sequence[int],
    terms: Sequence[Iterable[str]],
    episodes: Sequence[str | None],
    *,
    max_terms: int = 16,
) -> TermIndex:
    """The index over memories given in ascending seq order; each memory's first
    ``max_terms`` distinct non-empty terms count."""
    vocab: dict[str, int] = {}
    codes = [_codes(found, vocab, max_terms) for found in terms]
    return _assemble(seqs, codes, list(vocab), episodes)


def _assemble(
    seqs: Sequence[int],
    codes: Sequence[Sequence[int]],
    words: Sequence[str],
    episodes: Sequence[str | None],
) -> TermIndex:
    """The index from each memory's term codes (``words[code]`` is the term)."""
    n = len(codes)
    lengths = np.fromiter((len(c) for c in codes), dtype=np.int64, count=n)
    dptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    flat = np.fromiter(chain.from_iterable(codes), dtype=np.int64, count=int(dptr[-1]))
    return _assemble_flat(np.asarray(seqs, dtype=np.int64), dptr, flat, words, episodes)


def _assemble_flat(
    seqs: Ints, dptr: Ints, flat: Ints, words: Sequence[str], episodes: Sequence[str | None]
) -> TermIndex:
    """The index from the memories' term codes as one CSR (``flat[dptr[i]:dptr[i + 1]]``
    are memory ``i``'s codes). Codes are renumbered by first appearance in seq order and
    unused words dropped, so the result is the same whatever order the codes were handed
    out in (``build_index`` and ``TermCache`` agree exactly; an insight names its two terms
    in the same order)."""
    n = len(seqs)
    lengths = np.diff(dptr)
    used, first = np.unique(flat, return_index=True)
    order_used = used[np.argsort(first, kind="stable")]  # by first appearance
    renumber = np.zeros(len(words) + 1, dtype=np.int64)
    renumber[order_used] = np.arange(len(order_used), dtype=np.int64)
    dterms = renumber[flat] if len(flat) else flat
    n_terms = len(order_used)
    owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
    order = np.lexsort((owner, dterms))  # by term, then memory
    df = np.bincount(dterms, minlength=n_terms).astype(np.int64)
    pptr = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
    names: dict[str, int] = {}
    ep = np.fromiter(
        (
            names.setdefault(e, len(names)) if e is not None else -(i + 1)
            for i, e in enumerate(episodes)
        ),
        dtype=np.int64,
        count=n,
    )
    return TermIndex(
        seqs,
        ep,
        tuple(words[int(c)] for c in order_used),
        dptr,
        dterms,
        pptr,
        owner[order],
        df,
    )


def _codes(found: Iterable[str], vocab: dict[str, int], max_terms: int) -> tuple[int, ...]:
    """A memory's first ``max_terms`` distinct non-empty terms, as codes of ``vocab``
    (new terms are added to it)."""
    mine: dict[int, None] = {}
    for raw in found:
        term = normalise_term(raw)
        if term:
            mine.setdefault(vocab.setdefault(term, len(vocab)), None)
            if len(mine) >= max_terms:
                break
    return tuple(mine)


class TermCache:
    """The term index kept between cycles, so a cycle parses only what changed.

    Rebuilding the index from every memory's stored terms took ~3 s of Python at 100k
    memories each cycle, holding the GIL against the daemon's event loop (/query p95 3.3x
    quiet while dreaming). The cache keeps each memory's term codes under a 64-bit digest
    of the exact stored text they were parsed from (``key``: its concepts and entities as
    stored). Each cycle hands it every live memory's current key: a memory whose key is
    unchanged keeps its codes, a new or edited one is parsed again, one no longer handed
    over (forgotten, merged, purged) is dropped. So it is validated against the store every
    cycle and the index it gives is exactly ``build_index`` over the same rows (a test
    checks that). Terms no memory holds any more stay in the vocabulary until it is twice
    the size of the one in use; then the cache starts over (one full parse).

    Its state is a few numpy arrays and one string (the vocabulary joined by newlines: a
    normalised term holds no newline), never a graph of Python objects: at 100k memories
    it pickles in milliseconds, so the dreamer keeps it in the daemon and hands it to the
    worker process that refreshes it each cycle (``mnemonic.cognition.dreaming_plan``)."""

    def __init__(self, max_terms: int = 16) -> None:
        self._max_terms = max_terms
        self.parsed = 0  # memories parsed by the last ``index`` call
        self._reset()

    def __len__(self) -> int:
        return len(self._seq)

    @property
    def vocabulary(self) -> int:
        """Terms the cache has codes for (in use or not)."""
        return self._n_words

    def _reset(self) -> None:
        self._seq: Ints = np.zeros(0, dtype=np.int64)  # cached memories, ascending
        self._digest: Ints = np.zeros(0, dtype=np.int64)  # of the key each was parsed from
        self._ptr: Ints = np.zeros(1, dtype=np.int64)  # CSR over ``_codes``
        self._codes: Ints = np.zeros(0, dtype=np.int64)
        self._words = ""  # the vocabulary, code order, joined by newlines
        self._n_words = 0

    def index(
        self,
        seqs: Sequence[int],
        keys: Sequence[Any],
        terms_of: Callable[[int], Iterable[str]],
        episodes: Sequence[str | None],
        *,
        pause: Callable[[], None] | None = None,
    ) -> TermIndex:
        """The index over memories in ascending seq order; ``terms_of(i)`` gives the terms
        of the ``i``-th one, called only when its ``keys[i]`` (any value with a stable
        ``repr``) is not the cached one. ``pause`` is called every few thousand memories
        (a caller in a thread yields the GIL)."""
        n = len(seqs)
        seq = np.asarray(seqs, dtype=np.int64).reshape(n)
        digest = np.zeros(n, dtype=np.int64)
        for i, key in enumerate(keys):
            digest[i] = key_digest(key)
            if pause is not None and i % _SLICE == _SLICE - 1:
                pause()
        hit = np.zeros(n, dtype=bool)
        at = np.zeros(n, dtype=np.int64)
        if len(self._seq) and n:
            at = np.minimum(np.searchsorted(self._seq, seq), len(self._seq) - 1)
            hit = (self._seq[at] == seq) & (self._digest[at] == digest)
        lengths = np.zeros(n, dtype=np.int64)
        lengths[hit] = self._ptr[at[hit] + 1] - self._ptr[at[hit]]
        missed = np.flatnonzero(~hit)
        words = self._words.split("\n") if self._n_words else []
        parsed: list[tuple[int, ...]] = []
        if len(missed):
            vocab = {w: c for c, w in enumerate(words)}
            for k, i in enumerate(missed.tolist()):
                found = _codes(terms_of(i), vocab, self._max_terms)
                parsed.append(found)
                lengths[i] = len(found)
                if pause is not None and k % _SLICE == _SLICE - 1:
                    pause()
            words.extend(islice(vocab, len(words), None))
        ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        flat = np.zeros(int(ptr[-1]), dtype=np.int64)
        kept = np.flatnonzero(hit)
        flat[_ranges(ptr[kept], lengths[kept])] = self._codes[
            _ranges(self._ptr[at[kept]], lengths[kept])
        ]
        flat[_ranges(ptr[missed], lengths[missed])] = np.fromiter(
            chain.from_iterable(parsed), dtype=np.int64, count=int(lengths[missed].sum())
        )
        index = _assemble_flat(seq, ptr, flat, words, episodes)
        self.parsed = len(missed)
        if len(words) > 2 * len(index.vocab) + 1024:
            self._reset()  # a vocabulary grown past its use: parse all again next cycle
        else:
            self._seq, self._digest, self._ptr, self._codes = seq, digest, ptr, flat
            self._words, self._n_words = "\n".join(words), len(words)
        return index


def key_digest(key: Any) -> int:
    """A stable 64-bit digest of a cache key (``hash`` of a string differs between
    processes). Two different stored texts share one with probability 2^-64."""
    raw = hashlib.blake2b(repr(key).encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(raw.digest(), "little", signed=True)


_SLICE = 4096  # memories between two ``pause`` calls


def usable_terms(index: TermIndex, max_df_share: float, max_df: int) -> npt.NDArray[np.bool_]:
    """Terms rare enough to mean something: in 2 or more memories, at most
    ``max_df_share`` of them (never fewer than 2) and at most ``max_df``."""
    limit = min(max_df, max(2, math.floor(max_df_share * index.n)))
    return (index.df >= 2) & (index.df <= limit)


def sharing_terms(
    index: TermIndex,
    pairs: Iterable[tuple[int, int]],
    usable: npt.NDArray[np.bool_],
    min_evidence: float,
) -> list[tuple[int, int]]:
    """The pairs of seqs whose two memories share usable terms with summed normalised idf
    of at least ``min_evidence`` (the evidence a cross-episode link needs); a memory the
    index does not hold shares nothing."""
    idf = normalised_idf(index.df, index.n)
    rows: dict[int, frozenset[int]] = {}

    def terms(seq: int) -> frozenset[int]:
        found = rows.get(seq)
        if found is None:
            i = int(np.searchsorted(index.seq, seq))
            held = i < index.n and int(index.seq[i]) == seq
            own = index.terms_of(i) if held else np.zeros(0, dtype=np.int64)
            found = rows[seq] = frozenset(int(t) for t in own[usable[own]])
        return found

    out = []
    for a, b in pairs:
        shared = terms(a) & terms(b)
        if shared and sum(float(idf[t]) for t in shared) >= min_evidence:
            out.append((a, b))
    return out


def normalised_idf(df: Ints, n: int) -> Floats:
    """``ln(N / df) / ln N`` in [0, 1]; 0 for every term when there are fewer than 2
    memories."""
    if n < 2:
        return np.zeros(len(df), dtype=np.float64)
    safe = np.maximum(df, 1).astype(np.float64)
    out: Floats = np.clip(np.log(n / safe) / math.log(n), 0.0, 1.0)
    return out


def evidence_strength(evidence: Floats, cap: float) -> Floats:
    """Shared-term evidence squashed into (0, cap]."""
    out: Floats = np.minimum(cap, 1.0 - np.exp(-np.asarray(evidence, dtype=np.float64)))
    return out


def _ranges(starts: Ints, lengths: Ints) -> Ints:
    """Concatenated ``arange(start, start + length)`` for each pair (vectorised)."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.arange(total, dtype=np.int64) - np.repeat(offsets - starts, lengths)


def cross_candidates(index: TermIndex, seeds: Ints, p: LinkParams) -> tuple[Ints, Ints, Floats]:
    """Pairs ``(i, j)`` of memory indices (``i < j``, at least one a seed) in different
    episodes sharing usable terms with summed normalised idf >= ``min_shared_idf``, and
    that evidence. Each seed keeps its ``2 * max_related_per_memory`` best pairs."""
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))
    if len(seeds) == 0 or index.n < 2:
        return empty
    usable = usable_terms(index, p.max_df_share, p.max_term_df)
    idf = normalised_idf(index.df, index.n)
    counts = index.doc_ptr[seeds + 1] - index.doc_ptr[seeds]
    seed_of = np.repeat(seeds, counts)
    term = index.doc_terms[_ranges(index.doc_ptr[seeds], counts)]
    keep = usable[term]
    seed_of, term = seed_of[keep], term[keep]
    lengths = index.df[term]
    other = index.post_docs[_ranges(index.post_ptr[term], lengths)]
    seed_of, term = np.repeat(seed_of, lengths), np.repeat(term, lengths)
    keep = index.episode[other] != index.episode[seed_of]
    seed_of, term, other = seed_of[keep], term[keep], other[keep]
    if len(other) == 0:
        return empty
    lo, hi = np.minimum(seed_of, other), np.maximum(seed_of, other)
    # one contribution per (pair, term) even when both ends are seeds
    order, first = _groups(lo, hi, term)
    lo, hi, term = lo[order][first], hi[order][first], term[order][first]
    order, first = _groups(lo, hi)
    group = np.cumsum(first) - 1
    evidence: Floats = np.bincount(group, weights=idf[term[order]]).astype(np.float64)
    a, b = lo[order][first], hi[order][first]
    # evidence 0 (terms every memory holds) would be a link of strength 0: none at all
    keep = (evidence >= p.min_shared_idf) & (evidence > 0)
    a, b, evidence = a[keep], b[keep], evidence[keep]
    if len(a) == 0:
        return empty
    return _best_per_seed(a, b, evidence, seeds, 2 * p.max_related_per_memory)


def _groups(*cols: Ints) -> tuple[Ints, npt.NDArray[np.bool_]]:
    """The order sorting the rows of ``cols`` (first column first) and, in that order,
    True where a new distinct row starts (a faster ``np.unique(axis=1)``)."""
    order = np.lexsort(cols[::-1])
    first = np.ones(len(order), dtype=bool)
    if len(order) > 1:
        change = np.zeros(len(order) - 1, dtype=bool)
        for col in cols:
            ranked = col[order]
            change |= ranked[1:] != ranked[:-1]
        first[1:] = change
    return order, first


def _best_per_seed(
    a: Ints, b: Ints, evidence: Floats, seeds: Ints, per_seed: int
) -> tuple[Ints, Ints, Floats]:
    is_seed = np.zeros(int(max(a.max(initial=0), b.max(initial=0), seeds.max()) + 1), bool)
    is_seed[seeds] = True
    owner = np.where(is_seed[a], a, b)  # the seed a pair belongs to (the lower one if both)
    order = np.lexsort((b, a, -evidence, owner))
    owner_sorted = owner[order]
    starts = np.searchsorted(owner_sorted, owner_sorted, side="left")
    rank = np.arange(len(order)) - starts
    chosen = np.sort(order[rank < per_seed])
    return a[chosen], b[chosen], evidence[chosen]


def choose_links(
    a: Sequence[int],
    b: Sequence[int],
    evidence: Sequence[float],
    existing: Mapping[int, int],
    per_memory: int,
    per_cycle: int,
) -> list[int]:
    """Positions of the candidates to link, strongest evidence first, so that no memory
    ends with more than ``per_memory`` related links (``existing`` counts the ones it has)
    and at most ``per_cycle`` are added."""
    have: Counter[int] = Counter(existing)
    chosen: list[int] = []
    for i in sorted(range(len(a)), key=lambda k: (-evidence[k], a[k], b[k])):
        if len(chosen) >= per_cycle:
            break
        x, y = a[i], b[i]
        if have[x] >= per_memory or have[y] >= per_memory:
            continue
        have[x] += 1
        have[y] += 1
        chosen.append(i)
    return chosen


# ---- insights ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Recurrence:
    """Two terms found together in the memories ``docs`` (indices), across ``episodes``
    distinct episodes."""

    first: str
    second: str
    docs: tuple[int, ...]
    episodes: int
    evidence: float

    @property
    def key(self) -> str:
        return insight_key(self.first, self.second)


def insight_key(first: str, second: str) -> str:
    """The identity of a co-occurrence insight: the same pair never gives two insights."""
    x, y = sorted((normalise_term(first), normalise_term(second)))
    return f"cooccurrence:{x}|{y}"


def _nested(x: str, y: str) -> bool:
    wx, wy = set(x.split()), set(y.split())
    return wx <= wy or wy <= wx


def recurrences(
    index: TermIndex,
    seeds: Ints,
    *,
    min_episodes: int,
    max_df_share: float,
    terms_per_memory: int = 8,
    known: frozenset[str] = frozenset(),
) -> list[Recurrence]:
    """Pairs of terms of the seeds that occur together in memories of at least
    ``min_episodes`` distinct episodes (memories outside episodes do not count), best
    first (more episodes, then rarer terms). Pairs whose key is ``known`` and pairs of
    which one term contains the other ("cache", "cache size") are left out."""
    if index.n < 2 or min_episodes < 1:
        return []
    limit = max(min_episodes, math.floor(max_df_share * index.n))
    idf = normalised_idf(index.df, index.n)
    seen: set[tuple[int, int]] = set()
    found: list[Recurrence] = []
    for s in seeds:
        terms = [int(t) for t in index.terms_of(int(s)) if min_episodes <= index.df[t] <= limit]
        terms = sorted(terms, key=lambda t: -idf[t])[:terms_per_memory]
        for i, t in enumerate(terms):
            for u in terms[i + 1 :]:
                pair = (min(t, u), max(t, u))
                if pair in seen:
                    continue
                seen.add(pair)
                x, y = index.vocab[pair[0]], index.vocab[pair[1]]
                if _nested(x, y) or insight_key(x, y) in known:
                    continue
                docs = np.intersect1d(index.docs_of(pair[0]), index.docs_of(pair[1]))
                eps = index.episode[docs]
                episodes = distinct_count(eps[eps >= 0])
                if episodes >= min_episodes:
                    found.append(
                        Recurrence(x, y, tuple(int(d) for d in docs), episodes,
                                   float(idf[pair[0]] + idf[pair[1]]))
                    )  # fmt: skip
    found.sort(key=lambda r: (-r.episodes, -r.evidence, r.first, r.second))
    return found


@dataclass(frozen=True, slots=True)
class EpisodeNote:
    title: str
    started_at: datetime


def insight_text(r: Recurrence, episodes: Sequence[EpisodeNote], shown: int = 3) -> str:
    """The heuristic insight: which terms recur together, in how many episodes, and the
    first few of those episodes (title and date)."""
    notes = sorted(episodes, key=lambda e: e.started_at)
    parts = [
        f"{e.title} ({e.started_at.date().isoformat()})"
        if e.title
        else e.started_at.date().isoformat()
        for e in notes[:shown]
    ]
    more = f" and {len(notes) - shown} more" if len(notes) > shown else ""
    listed = f": {'; '.join(parts)}{more}" if parts else ""
    return f'"{r.first}" and "{r.second}" came up together in {r.episodes} episodes{listed}.'


INSIGHT_MAX_CHARS = 300

_SYSTEM = (
    "You read notes from a developer's memory that share two recurring topics and state, "
    "in one sentence, the connection between them that the notes show. Use only names, "
    "numbers and facts written in the notes; do not speculate."
)


def insight_request(r: Recurrence, texts: Sequence[str]) -> CompletionRequest:
    """The question for an LLM insight over stored (redacted) source texts."""
    notes = "\n".join(f"{i + 1}. {t}" for i, t in enumerate(texts))
    return CompletionRequest(
        operation="insight",
        agent="dreaming",
        system=_SYSTEM,
        user=(
            f'Recurring topics: "{r.first}" and "{r.second}" (together in {r.episodes} '
            f"episodes).\nNotes:\n{notes}\n\nAnswer with the insight as JSON."
        ),
        schema={
            "type": "object",
            "properties": {"insight": {"type": "string", "maxLength": INSIGHT_MAX_CHARS}},
            "required": ["insight"],
            "additionalProperties": False,
        },
        max_tokens=200,
    )


def accept_insight(answer: Mapping[str, Any] | None, sources: Sequence[str]) -> str | None:
    """The LLM's sentence when usable and grounded (no name, number or path absent from
    the sources), else None: keep the heuristic text."""
    if not answer or not isinstance(answer.get("insight"), str):
        return None
    text = " ".join(str(answer["insight"]).split())
    if not text or len(text) > INSIGHT_MAX_CHARS:
        return None
    return None if unsupported_claims("\n".join(sources), [text]) else text
