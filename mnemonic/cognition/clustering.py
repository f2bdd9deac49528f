"""Recurring themes as communities of a memory graph (pure; runs in a worker thread).

The graph is built per cycle over a bounded set of live memories (the caller caps it):

* an edge per stored association between two of them (``similar``, ``related``, ...),
  weighted by the link's strength;
* edges between memories that share a *rare* term (a concept, or an entity an LLM named),
  weighted by the term's inverse document frequency. A term found in more than
  ``max_term_df`` of the memories says nothing about a theme ("code", "error") and would
  glue everything into one blob, so it adds no edge. A term's members are not joined as a
  clique (quadratic: 50 members, 1,225 edges) but each to its next ``term_window`` members
  in seq order: the members still end up densely connected, and the edges stay linear.

Community detection is networkx's Louvain (a fixed seed, so a cycle is reproducible) or
greedy modularity; measured on 5,000 memories Louvain is several times faster (see the
report in ``agents/abstraction.py``). A community becomes a :class:`Cluster` when it has at
least ``min_evidence`` memories spread over at least two episodes or two days (one burst
of work is an episode, not a recurring theme) and shares at least one term.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx

from mnemonic.encoding.text import STOPWORDS


@dataclass(frozen=True, slots=True)
class Node:
    """A live memory as the clustering sees it."""

    seq: int
    terms: frozenset[str]  # casefolded concepts and entities
    project: str
    episode: str | None
    day: int  # the date's ordinal (UTC)


@dataclass(frozen=True, slots=True)
class Link:
    a: int
    b: int
    strength: float


@dataclass(frozen=True, slots=True)
class GraphParams:
    max_term_df: int = 50
    term_window: int = 8
    term_weight: float = 1.0
    link_weight: float = 1.0
    algorithm: str = "louvain"  # or "greedy"
    resolution: float = 1.0
    seed: int = 13


@dataclass(frozen=True, slots=True)
class Cluster:
    """A community that qualifies as a recurring theme."""

    seqs: tuple[int, ...]  # ascending
    concepts: tuple[str, ...]  # top terms by tf-idf, best first
    project: str  # the members' project when they share one, else ""
    episodes: int
    days: int


def terms_of(concepts: Iterable[str], entities: Iterable[str] = ()) -> frozenset[str]:
    """A memory's terms: its concepts and entities (casefolded) and, for a phrase, its
    words too. The heuristic encoder writes phrases ("docker compose volume", "docker
    image") that rarely repeat whole; their words ("docker") carry the theme."""
    found: set[str] = set()
    for phrase in (*concepts, *entities):
        key = " ".join(phrase.casefold().split())
        if not key:
            continue
        found.add(key)
        if " " in key:
            found.update(w for w in key.split() if len(w) >= 3 and w not in STOPWORDS)
    return frozenset(found)


def term_idf(nodes: Sequence[Node]) -> dict[str, float]:
    """``log(N / df)`` of every term (N = len(nodes))."""
    df: Counter[str] = Counter()
    for node in nodes:
        df.update(node.terms)
    n = max(len(nodes), 1)
    return {t: math.log(n / c) for t, c in df.items()}


def build_graph(
    nodes: Sequence[Node], links: Iterable[Link], idf: dict[str, float], p: GraphParams
) -> nx.Graph:
    """The weighted memory graph (isolated memories left out)."""
    known = {n.seq for n in nodes}
    weights: defaultdict[tuple[int, int], float] = defaultdict(float)
    for link in links:
        if link.a in known and link.b in known and link.a != link.b:
            key = (link.a, link.b) if link.a < link.b else (link.b, link.a)
            weights[key] += p.link_weight * max(0.0, min(1.0, link.strength))
    members: defaultdict[str, list[int]] = defaultdict(list)
    for node in sorted(nodes, key=lambda n: n.seq):
        # sorted: a frozenset's order follows the process's string hash seed, and the
        # order edges are added in steers Louvain; sorted, a seed gives the same themes
        # in every process (they differed between two runs over the same store)
        for term in sorted(node.terms):
            members[term].append(node.seq)
    top = max(idf.values(), default=1.0) or 1.0
    for term, seqs in members.items():
        if not 2 <= len(seqs) <= p.max_term_df:
            continue
        w = p.term_weight * idf[term] / top
        for i, a in enumerate(seqs):
            for b in seqs[i + 1 : i + 1 + p.term_window]:
                weights[(a, b)] += w
    graph = nx.Graph()
    graph.add_weighted_edges_from((a, b, w) for (a, b), w in weights.items() if w > 0)
    return graph


def communities(graph: nx.Graph, p: GraphParams) -> list[frozenset[int]]:
    """Communities of ``graph`` by the configured algorithm (deterministic)."""
    if graph.number_of_edges() == 0:
        return []
    if p.algorithm == "greedy":
        found = nx.community.greedy_modularity_communities(
            graph, weight="weight", resolution=p.resolution
        )
    else:
        found = nx.community.louvain_communities(
            graph, weight="weight", resolution=p.resolution, seed=p.seed
        )
    return [frozenset(int(s) for s in c) for c in found]


def top_terms(
    members: Sequence[Node], idf: dict[str, float], limit: int, *, min_tf: int = 2
) -> tuple[str, ...]:
    """The community's terms by tf-idf (tf = members holding it, at least ``min_tf``)."""
    tf: Counter[str] = Counter()
    for node in members:
        tf.update(node.terms)
    scored = [(c * idf.get(t, 0.0), t) for t, c in tf.items() if c >= min_tf]
    scored.sort(key=lambda st: (-st[0], st[1]))
    return tuple(t for score, t in scored[:limit] if score > 0)


def describe(members: Sequence[Node], idf: dict[str, float], max_concepts: int) -> Cluster:
    projects = Counter(n.project for n in members)
    project, count = projects.most_common(1)[0]
    return Cluster(
        seqs=tuple(sorted(n.seq for n in members)),
        concepts=top_terms(members, idf, max_concepts),
        project=project if count == len(members) else "",
        episodes=len({n.episode for n in members if n.episode is not None}),
        days=len({n.day for n in members}),
    )


def qualifies(cluster: Cluster, min_evidence: int) -> bool:
    """Enough memories, across two episodes or two days, sharing at least one term."""
    spread = cluster.episodes >= 2 or cluster.days >= 2
    return len(cluster.seqs) >= min_evidence and spread and bool(cluster.concepts)


def find_clusters(
    nodes: Sequence[Node],
    links: Iterable[Link],
    p: GraphParams,
    *,
    min_evidence: int,
    max_concepts: int,
) -> list[Cluster]:
    """Every qualifying community, largest first."""
    idf = term_idf(nodes)
    graph = build_graph(nodes, links, idf, p)
    by_seq = {n.seq: n for n in nodes}
    found: list[Cluster] = []
    for community in communities(graph, p):
        if len(community) < min_evidence:
            continue
        cluster = describe([by_seq[s] for s in sorted(community)], idf, max_concepts)
        if qualifies(cluster, min_evidence):
            found.append(cluster)
    found.sort(key=lambda c: (-len(c.seqs), c.seqs[0]))
    return found
