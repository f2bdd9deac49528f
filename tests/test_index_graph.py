"""The in-memory association graph against a trivially correct model: a dict of edges keyed
by (low seq, high seq, relation code). Every mutation, compaction step and read is checked
against it, and ``spread_arrays`` against the SQL-era ``spread`` driven by the same model."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemonic.index.graph import (
    RELATIONS,
    AssociationGraph,
    CompactionInput,
    build_csr,
)
from mnemonic.recall.activation import Spread, SpreadSettings, spread, spread_arrays
from mnemonic.store.models import Association, Relation

Key = tuple[int, int, int]
Model = dict[Key, float]
NODES = 10  # small, so random operations collide often


def _key(a: int, b: int, code: int) -> Key:
    return (min(a, b), max(a, b), code)


def _f32(x: float) -> float:
    return float(np.float32(x))


def _model_neighbours(model: Model, seqs: Sequence[int]) -> list[tuple[int, int, int, float]]:
    wanted = set(seqs)
    out = []
    for (a, b, code), value in model.items():
        if a in wanted:
            out.append((a, b, code, value))
        if b in wanted:
            out.append((b, a, code, value))
    return sorted(out)


def _graph_neighbours(
    graph: AssociationGraph, seqs: Sequence[int]
) -> list[tuple[int, int, int, float]]:
    src, tgt, rel, strength = graph.neighbours(np.array(seqs, np.int64))
    assert src.dtype == np.int64 and tgt.dtype == np.int64
    return sorted(zip(src.tolist(), tgt.tolist(), rel.tolist(), strength.tolist(), strict=True))


def _assert_same(graph: AssociationGraph, model: Model) -> None:
    everything = list(range(-1, NODES + 2))
    assert _graph_neighbours(graph, everything) == _model_neighbours(model, everything)
    for seq in range(NODES + 1):
        assert _graph_neighbours(graph, [seq]) == _model_neighbours(model, [seq])
    assert graph.edge_count == len(model)
    for (a, b, code), value in model.items():
        assert graph.strength(b, a, code) == value
    assert graph.describe()["edges"] == len(model)


def _build(model: Model, flip: Sequence[bool] = ()) -> AssociationGraph:
    keys = list(model)
    flips = [bool(flip[i]) if i < len(flip) else False for i in range(len(keys))]
    src = [b if f else a for (a, b, _), f in zip(keys, flips, strict=True)]
    tgt = [a if f else b for (a, b, _), f in zip(keys, flips, strict=True)]
    return AssociationGraph.build(
        np.array(src, np.int64),
        np.array(tgt, np.int64),
        np.array([k[2] for k in keys], np.int8),
        np.array(list(model.values()), np.float64),
    )


seqs = st.integers(0, NODES)
codes = st.integers(0, len(RELATIONS) - 1)
strengths = st.floats(0.0, 1.0, allow_nan=False).map(_f32)
pairs = st.tuples(seqs, seqs).filter(lambda p: p[0] != p[1])
edge_sets = st.dictionaries(
    st.tuples(pairs, codes).map(lambda t: _key(t[0][0], t[0][1], t[1])), strengths, max_size=30
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), pairs, codes, strengths),
        st.tuples(st.just("remove_edge"), pairs, codes),
        st.tuples(st.just("remove_node"), seqs),
        st.tuples(st.sampled_from(["compact", "begin", "install", "abandon"])),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(initial=edge_sets, ops=operations)
def test_every_mutation_and_compaction_step_matches_the_model(initial: Model, ops: list) -> None:
    graph = _build(initial)
    model = dict(initial)
    job: CompactionInput | None = None
    _assert_same(graph, model)
    for op in ops:
        match op:
            case ("upsert", (a, b), code, value):
                graph.upsert(a, b, code, value)
                model[_key(a, b, code)] = value
            case ("remove_edge", (a, b), code):
                existed = _key(a, b, code) in model
                assert graph.remove_edge(a, b, code) is existed
                model.pop(_key(a, b, code), None)
            case ("remove_node", seq):
                gone = [k for k in model if seq in k[:2]]
                assert graph.remove_node(seq) == len(gone)
                for k in gone:
                    del model[k]
            case ("compact",) if job is None:
                graph.compact()
                assert graph.overlay_size == 0
            case ("begin",) if job is None:
                job = graph.compaction_input()
                with pytest.raises(RuntimeError):
                    graph.compaction_input()
            case ("install",) if job is not None:
                graph.install(job, build_csr(job))  # mutations since "begin" must survive
                job = None
            case ("abandon",) if job is not None:
                graph.abandon(job)
                job = None
        _assert_same(graph, model)
    if job is not None:
        graph.install(job, build_csr(job))
    graph.compact()
    _assert_same(graph, model)
    assert graph.overlay_size == 0


@settings(max_examples=100, deadline=None)
@given(model=edge_sets, flip=st.lists(st.booleans(), max_size=30))
def test_building_from_arrays_equals_building_edge_by_edge(model: Model, flip: list[bool]) -> None:
    built = _build(model, flip)  # either orientation of a stored row is the same edge
    incremental = AssociationGraph()
    for (a, b, code), value in model.items():
        incremental.upsert(b, a, code, value)
    compacted = AssociationGraph()
    for (a, b, code), value in model.items():
        compacted.upsert(a, b, code, value)
    compacted.compact()
    for graph in (built, incremental, compacted):
        _assert_same(graph, model)
    assert built.overlay_size == 0 and compacted.overlay_size == 0
    assert incremental.overlay_size == len(model)


def test_bad_edges_are_refused() -> None:
    graph = AssociationGraph()
    for args in [(1, 1, 0, 0.5), (1, 2, len(RELATIONS), 0.5), (1, 2, 0, 1.5), (-1, 2, 0, 0.5)]:
        with pytest.raises(ValueError):
            graph.upsert(*args)
    one = np.array([1], np.int64)
    with pytest.raises(ValueError):
        AssociationGraph.build(one, one, np.array([0], np.int8), np.array([0.5]))
    with pytest.raises(ValueError):
        AssociationGraph.build(one, one + 1, np.array([9], np.int8), np.array([0.5]))
    assert graph.edge_count == 0
    assert graph.describe()["kind"] == "csr"


def test_compaction_becomes_due_once_the_overlay_outgrows_its_budget() -> None:
    graph = AssociationGraph()
    for i in range(10_001):
        graph.upsert(i, i + 1, 0, 0.5)
        if i == 9_999:
            assert not graph.needs_compaction
    assert graph.needs_compaction
    job = graph.compaction_input()
    assert not graph.needs_compaction  # one compaction at a time
    graph.install(job, build_csr(job))
    assert graph.overlay_size == 0 and graph.edge_count == 10_001
    assert graph.nbytes >= 10_001 * 2 * 9


# ---- spreading activation: arrays against the SQL-era loop ---------------------------


def _random_graph(seed: int, nodes: int, edges: int) -> tuple[AssociationGraph, Model]:
    """Distinct random strengths, so no two arrivals tie (ties are the one documented
    difference); part of the edges sit in the CSR, the rest and some removals in the
    overlay, so both layers feed the spread."""
    rng = np.random.default_rng(seed)
    values = rng.permutation(np.unique(rng.random(edges * 2).astype(np.float32)))
    model: Model = {}
    for value in values[:edges].tolist():
        a, b = rng.choice(nodes, 2, replace=False).tolist()
        model[_key(a, b, int(rng.integers(len(RELATIONS))))] = value
    keys = list(model)
    split = len(keys) // 2
    graph = _build({k: model[k] for k in keys[:split]})
    for k in keys[split:]:
        graph.upsert(k[1], k[0], k[2], model[k])
    for k in keys[: len(keys) // 8]:
        graph.remove_edge(*k)
        del model[k]
    return graph, model


def _old_spread(
    seeds: dict[int, float], model: Model, allowed: np.ndarray | None, cfg: SpreadSettings
) -> Spread:
    def ok(seq: int) -> bool:
        return allowed is None or (seq < len(allowed) and bool(allowed[seq]))

    async def fetch(frontier: Sequence[int]) -> list[Association]:
        return [
            Association(s, t, Relation(RELATIONS[c]), v)
            for s, t, c, v in _model_neighbours(model, frontier)
            if ok(t)
        ]

    return asyncio.run(spread(seeds, fetch, cfg))


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    nodes=st.integers(2, 40),
    density=st.integers(0, 6),
    hops=st.integers(0, 4),
    threshold=st.sampled_from([0.0, 0.01, 0.05, 0.3]),
    max_nodes=st.integers(1, 40),
    frontier=st.integers(1, 12),
    filtered=st.sampled_from(["none", "mask", "short"]),
)
def test_spread_arrays_equals_spread(
    seed: int,
    nodes: int,
    density: int,
    hops: int,
    threshold: float,
    max_nodes: int,
    frontier: int,
    filtered: str,
) -> None:
    graph, model = _random_graph(seed, nodes, density * nodes)
    rng = np.random.default_rng(seed + 1)
    picked = rng.choice(nodes, int(rng.integers(1, min(nodes, 8) + 1)), replace=False)
    levels = np.unique(rng.random(len(picked)))  # distinct seed levels
    seeds = dict(zip(picked.tolist(), levels.tolist(), strict=False))
    weights = {
        name: float(w) for name, w in zip(RELATIONS, rng.random(len(RELATIONS)), strict=True)
    }
    weights[RELATIONS[int(rng.integers(len(RELATIONS)))]] = 0.0
    del weights[RELATIONS[int(rng.integers(len(RELATIONS)))]]  # a missing relation weighs 0
    allowed = None if filtered == "none" else rng.random(nodes) < 0.7
    if filtered == "short" and allowed is not None:
        allowed = allowed[: nodes // 2]  # seqs past the end are not allowed
    cfg = SpreadSettings(
        hops=hops,
        decay=float(rng.uniform(0.3, 1.0)),
        threshold=threshold,
        max_nodes=max_nodes,
        frontier=frontier,
        relation_weights=weights,
    )
    new = spread_arrays(seeds, graph, allowed, cfg)
    old = _old_spread(seeds, model, allowed, cfg)
    assert new.activation == old.activation  # exact: same float64 arithmetic
    assert new.via == old.via
    assert (new.hops_run, new.edges_seen) == (old.hops_run, old.edges_seen)


def test_spread_arrays_on_a_hand_made_chain() -> None:
    # 1 -temporal(0.8)- 2 -similar(0.5)- 3; 3 is filtered out in the second run
    graph = AssociationGraph()
    graph.upsert(1, 2, RELATIONS.index("temporal"), 0.8)
    graph.upsert(3, 2, RELATIONS.index("similar"), 0.5)
    cfg = SpreadSettings(
        hops=2,
        decay=0.5,
        threshold=0.0,
        max_nodes=10,
        frontier=10,
        relation_weights={"temporal": 1.0, "similar": 0.5},
    )
    flow = spread_arrays({1: 1.0}, graph, None, cfg)
    assert flow.activation == pytest.approx({2: 0.4, 1: 0.16, 3: 0.05})
    assert flow.via == {2: (1, 2), 1: (2, 1), 3: (2, 3)}
    blocked = spread_arrays({1: 1.0}, graph, np.array([True, True, True]), cfg)
    assert set(blocked.activation) == {1, 2}


def test_an_arrival_exactly_at_the_threshold_counts() -> None:
    graph = AssociationGraph()
    graph.upsert(1, 4, RELATIONS.index("temporal"), 0.5)
    cfg = SpreadSettings(
        hops=1,
        decay=0.5,
        threshold=0.25,  # floor 0.25 = 1.0 x 0.5 x 1.0 x 0.5, all exact in binary
        max_nodes=10,
        frontier=10,
        relation_weights={"temporal": 1.0},
    )
    assert spread_arrays({1: 1.0}, graph, None, cfg).activation == {4: 0.25}
    assert _old_spread(
        {1: 1.0}, {(1, 4, RELATIONS.index("temporal")): 0.5}, None, cfg
    ).activation == {4: 0.25}


# ---- threads ---------------------------------------------------------------------------


def test_reads_in_a_thread_while_another_mutates_and_compacts() -> None:
    rng = np.random.default_rng(7)
    nodes = 200
    model: Model = {}
    for _ in range(2_000):
        a, b = rng.choice(nodes, 2, replace=False).tolist()
        model[_key(a, b, int(rng.integers(len(RELATIONS))))] = _f32(rng.random())
    graph = _build(model)
    stop = threading.Event()
    failures: list[BaseException] = []
    reads = 0

    def reader() -> None:
        nonlocal reads
        local = np.random.default_rng(8)
        try:
            while not stop.is_set():
                frontier = local.choice(nodes, 40, replace=False)
                src, tgt, rel, strength = graph.neighbours(frontier)
                triples = set(zip(src.tolist(), tgt.tolist(), rel.tolist(), strict=True))
                assert len(triples) == len(src)  # one consistent state: no key twice
                assert np.isin(src, frontier).all() and np.isfinite(strength).all()
                reads += 1
        except BaseException as exc:  # handed to the main thread
            failures.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for step in range(3_000):
            a, b = rng.choice(nodes, 2, replace=False).tolist()
            code = int(rng.integers(len(RELATIONS)))
            roll = rng.random()
            if roll < 0.6:
                value = _f32(rng.random())
                graph.upsert(a, b, code, value)
                model[_key(a, b, code)] = value
            elif roll < 0.95:
                graph.remove_edge(a, b, code)
                model.pop(_key(a, b, code), None)
            else:
                graph.remove_node(a)
                for k in [k for k in model if a in k[:2]]:
                    del model[k]
            if step % 500 == 250:
                job = graph.compaction_input()
                csr = build_csr(job)
                graph.upsert(a, b, code, 0.25)  # lands between freeze and install
                model[_key(a, b, code)] = 0.25
                graph.install(job, csr)
    finally:
        stop.set()
        thread.join()
    assert not failures, failures
    assert reads > 0
    every = list(range(nodes))
    assert _graph_neighbours(graph, every) == _model_neighbours(model, every)
    graph.compact()
    assert _graph_neighbours(graph, every) == _model_neighbours(model, every)
