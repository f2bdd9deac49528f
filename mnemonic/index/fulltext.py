"""In-memory BM25 that scores like SQLite's ``bm25(memories_fts, 1.0, 0.5, 0.5, 0.5)``.

Why: FTS5 ranks every matching row in C at ~3 µs a row, so a query whose common words
match 30k rows costs ~100 ms at 100k memories, and the SQL path had to drop common terms
to stay fast. Here the postings are numpy arrays and one query is a handful of vectorised
gathers, so the cost per matching row is a few nanoseconds.

Scores reproduce FTS5's formula (``fts5_aux.c``): for each query phrase ``i``

    idf_i = log((N - n_i + 0.5) / (n_i + 0.5)), or 1e-6 when that is <= 0
    score += idf_i * f_i * (k1 + 1) / (f_i + k1 * (1 - b + b * D / avgdl))

with k1 = 1.2, b = 0.75, ``f_i`` the phrase's column-weighted frequency in the document
(1.0 content, 0.5 summary, concepts and when_text), ``D`` the document's token count over
all columns and ``avgdl`` the mean ``D`` over every document in the index (the lead must
feed every row of ``memories_fts``, whatever its state, or N and avgdl drift). The
returned score is ``-bm25()``, higher is better.

Known difference: FTS5 matches a multi-token term (``foo_bar``, ``setup.py``) as a
phrase, tokens adjacent and in order in one column. This index keeps no positions: such a
term matches documents holding all of its tokens, with frequency the smallest of theirs.
That over-matches (``foo ... bar``) and can over-count; single-token terms are exact.

Layout (segment style): an immutable **base** segment (sorted term keys, CSR offsets,
int32 seqs and float32 frequencies), an optional **frozen** delta being compacted, and a
small mutable **delta** (dicts) for documents added or replaced since. ``doc_gen[seq]``
names the layer that holds each document's current postings; a replaced or removed
document's stale postings in the base or frozen layer are masked by it, never edited.

Term keys are 64-bit hashes of the token (:func:`term_key`, BLAKE2b), not strings: a
dict of 5M token strings costs ~0.5 GB at 1M memories, a sorted int64 array 40 MB. A
collision (odds ~T²/2^65, T distinct terms: ~1e-6 at 5M terms) would merge two terms'
postings. Keys are the same in every process, so the index can be saved and loaded
(``index/snapshot.py``; Python's ``hash()`` is salted per process).

Threads: mutations come from one thread at a time; a search may run in another thread.
A short ``threading.Lock`` guards every read and write of the dicts and the per-seq arrays:
a search holds it only while it gathers its terms' postings and document lengths, then
scores outside it. Growing an array replaces it (never ``resize`` in place).

Compaction (the delta grows with every write): ``begin_compaction`` (cheap, under the
lock) freezes the delta and starts an empty one; ``compact(job)`` (heavy, pure, run it in
a worker thread) merges the base with the frozen delta into a new base, using a snapshot
of ``doc_gen`` taken at freeze; ``install(job, segment)`` (cheap) swaps it in. Writes in
between land in the new delta and change ``doc_gen``, so they are neither lost nor
shadowed: the new base's postings for a document count only while ``doc_gen`` still
names the base or frozen layer it was built from.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from hashlib import blake2b

import numpy as np
import numpy.typing as npt

from mnemonic.distinct import distinct_count
from mnemonic.index.tokenize import tokens

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
WEIGHTS = (1.0, 0.5, 0.5, 0.5)
"""Column weights of the SQL path: content, summary, concepts, when_text."""
GROWTH = 1.25
COMPACT_MIN_POSTINGS = 50_000
COMPACT_FRACTION = 0.05

Int32s = npt.NDArray[np.int32]
Int64s = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float32]
Bools = npt.NDArray[np.bool_]


class _TermKeys(dict[str, int]):
    """Keys of recent tokens, computed on a miss. Hashing costs ~1 µs a token and a hit
    ~30 ns through ``map(keys.__getitem__, ...)`` (C all the way), and word use is skewed
    enough that 65k entries (~6 MB) catch nearly every token of a document. Full, it is
    emptied and refills: a bound without LRU bookkeeping. Each lookup or store is one dict
    operation, safe from several threads."""

    limit = 1 << 16

    def __missing__(self, token: str) -> int:
        digest = blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        key = int.from_bytes(digest, "little", signed=True)
        if len(self) >= self.limit:
            self.clear()
        self[token] = key
        return key


_TERM_KEYS = _TermKeys()


def term_key(token: str) -> int:
    """The index's key for one (stemmed) token: the first 8 bytes of its BLAKE2b digest as
    a signed int64. Stable across processes and Python versions, unlike ``hash()``, so a
    saved index (``index/snapshot.py``) stays valid; ``surrogatepass`` because text from
    JSON may hold lone surrogates, which the tokenizer passes through."""
    return _TERM_KEYS[token]


@dataclass(frozen=True, slots=True)
class Analyzed:
    """One document's terms: keys, column-weighted frequencies, FTS5 token count."""

    keys: tuple[int, ...]
    freqs: tuple[float, ...]
    length: int


def analyze(content: str, summary: str, concepts: str, when_text: str) -> Analyzed:
    """Tokenise a ``memories_fts`` row (pure: run it off the event loop).

    ``concepts`` is the column's text (concepts joined by spaces), as stored.
    """
    body = tokens(content)
    # one pass over the other three columns: a space separates tokens as a column end does
    rest = tokens(f"{summary} {concepts} {when_text}")
    doubled = Counter(body)  # content weighs 1.0, the other columns 0.5: count in halves
    doubled.update(body)
    doubled.update(rest)
    return Analyzed(
        tuple(map(_TERM_KEYS.__getitem__, doubled)),
        tuple(n / 2 for n in doubled.values()),
        len(body) + len(rest),
    )


@dataclass(frozen=True, slots=True)
class Segment:
    """Immutable postings: term ``keys[i]`` has ``seqs/freqs[offsets[i]:offsets[i+1]]``."""

    keys: Int64s
    offsets: Int64s
    seqs: Int32s
    freqs: Floats
    gen: int
    documents: int

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.offsets.nbytes + self.seqs.nbytes + self.freqs.nbytes)

    def postings(self, key: int) -> tuple[Int32s, Floats] | None:
        i = int(np.searchsorted(self.keys, key))
        if i == len(self.keys) or int(self.keys[i]) != key:
            return None
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.seqs[a:b], self.freqs[a:b]


def _empty_segment(gen: int) -> Segment:
    return Segment(
        np.zeros(0, np.int64),
        np.zeros(1, np.int64),
        np.zeros(0, np.int32),
        np.zeros(0, np.float32),
        gen,
        0,
    )


def _segment_from_arrays(keys: Int64s, seqs: Int32s, freqs: Floats, gen: int) -> Segment:
    """CSR from unsorted (key, seq, freq) triples; seq order within a key is kept."""
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    seqs = seqs[order]
    freqs = freqs[order]
    del order
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1]))[: len(keys)])
    uniq = keys[starts]
    offsets = np.empty(len(uniq) + 1, np.int64)
    offsets[:-1] = starts
    offsets[-1] = len(keys)
    documents = distinct_count(seqs)
    return Segment(np.ascontiguousarray(uniq), offsets, seqs, freqs, gen, documents)


@dataclass(slots=True)
class _Delta:
    gen: int
    docs: dict[int, Analyzed]
    post: dict[int, dict[int, float]]
    postings: int = 0


@dataclass(frozen=True, slots=True)
class CompactionJob:
    """What ``compact`` needs, taken under the lock by ``begin_compaction``."""

    base: Segment
    frozen: _Delta
    doc_gen: Int32s


def compact(job: CompactionJob) -> Segment:
    """The base merged with the frozen delta (pure and heavy: run it in a worker thread)."""
    base = job.base
    live = job.doc_gen[base.seqs] == base.gen
    counts = np.diff(base.offsets)
    base_keys = np.repeat(base.keys, counts)[live]
    base_seqs = base.seqs[live]
    base_freqs = base.freqs[live]
    del live, counts
    n = job.frozen.postings
    keys = np.empty(n, np.int64)
    seqs = np.empty(n, np.int32)
    freqs = np.empty(n, np.float32)
    i = 0
    for seq, doc in job.frozen.docs.items():
        m = len(doc.keys)
        keys[i : i + m] = doc.keys
        seqs[i : i + m] = seq
        freqs[i : i + m] = doc.freqs
        i += m
    return _segment_from_arrays(
        np.concatenate((base_keys, keys[:i])),
        np.concatenate((base_seqs, seqs[:i])),
        np.concatenate((base_freqs, freqs[:i])),
        job.frozen.gen,
    )


class FullTextIndex:
    """BM25 over every ``memories_fts`` row, keyed by seq (see the module docstring)."""

    def __init__(self, capacity: int = 0) -> None:
        self._lock = threading.Lock()
        self._base = _empty_segment(0)
        self._frozen: _Delta | None = None
        self._delta = _Delta(1, {}, {})
        self._next_gen = 2
        self._doc_gen: Int32s = np.full(max(capacity, 16), -1, np.int32)
        self._doc_len: Int32s = np.zeros(max(capacity, 16), np.int32)
        self._count = 0
        self._total = 0
        self._stale = 0  # documents with postings in the base/frozen layer no longer current

    # ---- building -------------------------------------------------------------------------
    @classmethod
    def build(cls, chunks: Iterable[Sequence[tuple[int, Analyzed]]]) -> FullTextIndex:
        """An index over streamed ``(seq, analyzed)`` chunks (start-up; pure, heavy).

        Each chunk is flattened into three compact arrays at once, so the Python objects
        of a chunk can be freed as the next one streams in; the CSR is one stable sort at
        the end. Peak memory is about twice the final postings.
        """
        keys: list[Int64s] = []
        seqs: list[Int32s] = []
        freqs: list[Floats] = []
        index = cls()
        max_seq = 0
        lengths: list[tuple[Int64s, Int32s]] = []
        for chunk in chunks:
            if not chunk:
                continue
            n = sum(len(a.keys) for _, a in chunk)
            k = np.fromiter((key for _, a in chunk for key in a.keys), np.int64, n)
            f = np.fromiter((x for _, a in chunk for x in a.freqs), np.float32, n)
            s = np.repeat(
                np.fromiter((seq for seq, _ in chunk), np.int32, len(chunk)),
                np.fromiter((len(a.keys) for _, a in chunk), np.int64, len(chunk)),
            )
            keys.append(k)
            seqs.append(s)
            freqs.append(f)
            cs = np.fromiter((seq for seq, _ in chunk), np.int64, len(chunk))
            cl = np.fromiter((a.length for _, a in chunk), np.int32, len(chunk))
            lengths.append((cs, cl))
            max_seq = max(max_seq, int(cs.max()))
        index._grow(max_seq)
        base_gen = 0
        for cs, cl in lengths:
            if np.any(index._doc_gen[cs] >= 0):
                raise ValueError("a seq appears twice in the build input")
            index._doc_gen[cs] = base_gen
            index._doc_len[cs] = cl
            index._count += len(cs)
            index._total += int(cl.sum(dtype=np.int64))
        del lengths
        if keys:
            all_keys = np.concatenate(keys)
            del keys
            all_seqs = np.concatenate(seqs)
            del seqs
            all_freqs = np.concatenate(freqs)
            del freqs
            index._base = _segment_from_arrays(all_keys, all_seqs, all_freqs, base_gen)
        return index

    # ---- mutations (one thread at a time) -------------------------------------------------
    def apply(self, seq: int, analyzed: Analyzed | None) -> None:
        """Add, replace (``analyzed``) or remove (``None``) the document ``seq``."""
        with self._lock:
            self._grow(seq)
            old = int(self._doc_gen[seq])
            if old >= 0:
                self._count -= 1
                self._total -= int(self._doc_len[seq])
                if old == self._delta.gen:
                    self._forget(self._delta, seq)
                else:
                    self._stale += 1
            if analyzed is None:
                self._doc_gen[seq] = -1
                self._doc_len[seq] = 0
                return
            delta = self._delta
            delta.docs[seq] = analyzed
            for key, freq in zip(analyzed.keys, analyzed.freqs, strict=True):
                delta.post.setdefault(key, {})[seq] = freq
            delta.postings += len(analyzed.keys)
            self._doc_gen[seq] = delta.gen
            self._doc_len[seq] = analyzed.length
            self._count += 1
            self._total += analyzed.length

    def _forget(self, delta: _Delta, seq: int) -> None:
        doc = delta.docs.pop(seq)
        for key in doc.keys:
            holders = delta.post[key]
            del holders[seq]
            if not holders:
                del delta.post[key]
        delta.postings -= len(doc.keys)

    def _grow(self, seq: int) -> None:
        size = len(self._doc_gen)
        if seq < size:
            return
        new = max(seq + 1, int(size * GROWTH) + 1)
        gen = np.full(new, -1, np.int32)
        gen[:size] = self._doc_gen
        length = np.zeros(new, np.int32)
        length[:size] = self._doc_len
        self._doc_gen, self._doc_len = gen, length

    # ---- compaction -----------------------------------------------------------------------
    def needs_compaction(self) -> bool:
        """True when the delta (or the stale share of the base) is worth folding in."""
        with self._lock:
            if self._frozen is not None:
                return False
            limit = max(COMPACT_MIN_POSTINGS, int(len(self._base.seqs) * COMPACT_FRACTION))
            stale_limit = max(1_000, int(self._base.documents * COMPACT_FRACTION))
            return self._delta.postings > limit or self._stale > stale_limit

    def begin_compaction(self) -> CompactionJob:
        """Freeze the delta (cheap); hand the result to :func:`compact`, then ``install``."""
        with self._lock:
            if self._frozen is not None:
                raise RuntimeError("a compaction is already under way")
            self._frozen = self._delta
            self._delta = _Delta(self._next_gen, {}, {})
            self._next_gen += 1
            return CompactionJob(self._base, self._frozen, self._doc_gen.copy())

    def install(self, job: CompactionJob, segment: Segment) -> None:
        """Swap in the compacted base (cheap: one O(capacity) relabel)."""
        with self._lock:
            if self._frozen is not job.frozen:
                raise RuntimeError("that compaction is not the one under way")
            gen = self._doc_gen
            gen[gen == job.base.gen] = segment.gen
            self._base = segment
            self._frozen = None
            self._stale = segment.documents - int(np.count_nonzero(gen == segment.gen))

    def compact_now(self) -> None:
        """All three steps in this thread (tests, small stores)."""
        job = self.begin_compaction()
        self.install(job, compact(job))

    # ---- snapshots (``index/snapshot.py``) --------------------------------------------------
    def export(self) -> dict[str, npt.NDArray[np.generic]]:
        """The index as plain arrays: the base segment's four, ``present`` (bool by seq: a
        document is indexed) and ``lengths`` (its token count). The delta is folded in
        first (``compact_now``) when it holds anything, so only base arrays are written;
        compaction also drops the postings of removed documents. References, not copies:
        write them before the next change."""
        with self._lock:
            folded = self._frozen is None and not self._delta.docs and self._stale == 0
        if not folded:
            self.compact_now()
        with self._lock:
            base = self._base
            if self._frozen is not None or self._delta.docs:
                raise RuntimeError("the full-text index changed while it was exported")
            present = self._doc_gen == base.gen
            if not bool(np.all(present[base.seqs])):
                raise RuntimeError("the full-text base holds postings of changed documents")
            lengths = np.where(present, self._doc_len, 0).astype(np.int32)
            return {
                "keys": base.keys,
                "offsets": base.offsets,
                "seqs": base.seqs,
                "freqs": base.freqs,
                "present": present,
                "lengths": lengths,
                "documents": np.array([base.documents], np.int64),
            }

    @classmethod
    def restore(cls, arrays: dict[str, npt.NDArray[np.generic]]) -> FullTextIndex:
        """An index from :meth:`export`'s arrays, which the caller has checked (sorted
        keys, monotone offsets, seqs in range and present: ``snapshot.py``)."""
        present = arrays["present"].astype(np.bool_, copy=False)
        lengths = arrays["lengths"].astype(np.int32, copy=False)
        index = cls()
        index._base = Segment(
            arrays["keys"].astype(np.int64, copy=False),
            arrays["offsets"].astype(np.int64, copy=False),
            arrays["seqs"].astype(np.int32, copy=False),
            arrays["freqs"].astype(np.float32, copy=False),
            0,
            int(arrays["documents"][0]),
        )
        index._doc_gen = np.where(present, 0, -1).astype(np.int32)
        index._doc_len = np.where(present, lengths, 0).astype(np.int32)
        index._count = int(np.count_nonzero(present))
        index._total = int(index._doc_len.sum(dtype=np.int64))
        return index

    # ---- queries ---------------------------------------------------------------------------
    def _postings(self, key: int) -> tuple[Int32s, Floats]:
        """Current postings of one token key (call with the lock held)."""
        seq_parts: list[Int32s] = []
        freq_parts: list[Floats] = []
        hit = self._base.postings(key)
        if hit is not None:
            s, f = hit
            if self._stale:
                keep = self._doc_gen[s] == self._base.gen
                s, f = s[keep], f[keep]
            seq_parts.append(s)
            freq_parts.append(f)
        for delta in (self._frozen, self._delta):
            if delta is None:
                continue
            holders = delta.post.get(key)
            if not holders:
                continue
            s = np.fromiter(holders.keys(), np.int32, len(holders))
            f = np.fromiter(holders.values(), np.float32, len(holders))
            if delta is self._frozen:
                keep = self._doc_gen[s] == delta.gen
                s, f = s[keep], f[keep]
            seq_parts.append(s)
            freq_parts.append(f)
        if not seq_parts:
            return np.zeros(0, np.int32), np.zeros(0, np.float32)
        if len(seq_parts) == 1:
            return seq_parts[0], freq_parts[0]
        return np.concatenate(seq_parts), np.concatenate(freq_parts)

    def _phrase(
        self, keys: tuple[int, ...], cache: dict[int, tuple[Int32s, Floats]]
    ) -> tuple[Int32s, Floats]:
        """Documents holding every token of a phrase, frequency the smallest (lock held)."""
        parts = []
        for key in keys:
            if key not in cache:
                cache[key] = self._postings(key)
            parts.append(cache[key])
        seqs, freqs = parts[0]
        for other_seqs, other_freqs in parts[1:]:
            seqs, mine, theirs = np.intersect1d(
                seqs, other_seqs, assume_unique=True, return_indices=True
            )
            freqs = np.minimum(freqs[mine], other_freqs[theirs])
        return seqs, freqs

    def search(
        self,
        terms: Sequence[str],
        allowed: Bools | None = None,
        limit: int = 30,
        match_budget: int | None = None,
    ) -> list[tuple[int, float]]:
        """The best ``limit`` documents for ``terms`` (OR-ed phrases) as (seq, -bm25).

        ``terms`` are ``recall.fts_query.query_terms`` output; each is tokenised like FTS5
        does the quoted phrase. ``allowed`` is a bool array indexed by seq (seqs beyond it
        are not allowed). ``match_budget`` reproduces ``SQLiteStore.full_text``: when the
        terms' document frequencies add up to more than it, the commonest are dropped.
        Ties are broken by seq.
        """
        phrases = [tuple(term_key(t) for t in tokens(term)) for term in terms]
        found: list[tuple[Int32s, Floats, Int32s]] = []
        nothing = (np.zeros(0, np.int32), np.zeros(0, np.float32), np.zeros(0, np.int32))
        with self._lock:
            count, total = self._count, self._total
            cache: dict[int, tuple[Int32s, Floats]] = {}
            for keys in phrases:
                if not keys:
                    found.append(nothing)
                    continue
                seqs, freqs = self._phrase(keys, cache)
                found.append((seqs, freqs, self._doc_len[seqs]))
            capacity = len(self._doc_len)
        if count == 0 or limit <= 0:
            return []
        chosen = list(range(len(found)))
        if match_budget is not None and len(chosen) >= 2:
            chosen = _within_budget([len(f[0]) for f in found], match_budget)
        avgdl = total / count
        scores = np.zeros(capacity, np.float64)
        for i in chosen:
            seqs, freqs, lengths = found[i]
            n = len(seqs)
            if n == 0:
                continue
            idf = math.log((count - n + 0.5) / (n + 0.5))
            if idf <= 0.0:
                idf = MIN_IDF
            f = freqs.astype(np.float64)
            norm = K1 * (1.0 - B) + (K1 * B / avgdl) * lengths
            scores[seqs] += idf * (f * (K1 + 1.0)) / (f + norm)
        cand = np.flatnonzero(scores)
        if allowed is not None:
            cand = cand[cand < len(allowed)]
            cand = cand[allowed[cand]]
        if len(cand) == 0:
            return []
        values = scores[cand]
        if len(cand) > limit:
            top = np.argpartition(-values, limit - 1)[:limit]
            cand, values = cand[top], values[top]
        order = np.lexsort((cand, -values))
        return [(int(cand[i]), float(values[i])) for i in order]

    def document_frequency(self, term: str) -> int:
        """How many documents match ``term`` (as the phrase ``search`` would use)."""
        return len(self._holders(term))

    def allowed_holders(self, term: str, allowed: Bools, at_least: int) -> Int32s:
        """The documents ``allowed`` lets through that match ``term`` (as ``search``'s
        phrase), in seq order; none when fewer than ``at_least`` match at all (the mask is
        then not looked at)."""
        seqs = self._holders(term)
        if len(seqs) < at_least:
            return np.zeros(0, np.int32)
        seqs = seqs[seqs < len(allowed)]
        return np.sort(seqs[allowed[seqs]])

    def _holders(self, term: str) -> Int32s:
        """The documents that match ``term`` as ``search``'s phrase, in no set order."""
        keys = tuple(term_key(t) for t in tokens(term))
        if not keys:
            return np.zeros(0, np.int32)
        with self._lock:
            return self._phrase(keys, {})[0]

    # ---- reporting -------------------------------------------------------------------------
    @property
    def document_count(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays plus an estimate for the delta's dicts (~100 B a posting)."""
        with self._lock:
            deltas = self._delta.postings + (self._frozen.postings if self._frozen else 0)
            return (
                self._base.nbytes + int(self._doc_gen.nbytes + self._doc_len.nbytes) + deltas * 100
            )

    def describe(self) -> dict[str, object]:
        with self._lock:
            delta_docs = len(self._delta.docs) + (len(self._frozen.docs) if self._frozen else 0)
            terms = len(self._base.keys)
        return {
            "kind": "bm25-memory",
            "documents": self._count,
            "terms": terms,
            "delta_documents": delta_docs,
            "bytes": self.nbytes,
        }


def _within_budget(df: list[int], budget: int) -> list[int]:
    """``sqlite._within_budget`` over phrase indexes: rarest first, commonest dropped."""
    kept = sorted((i for i, n in enumerate(df) if n > 0), key=lambda i: df[i])
    while len(kept) > 1 and sum(df[i] for i in kept) > budget:
        kept.pop()
    return kept
