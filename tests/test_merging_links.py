"""The links a merge's gist inherits (``cognition.merging.inherited_links``), pure."""

from __future__ import annotations

from mnemonic.cognition.merging import inherited_links, supersede_gist

GIST = 100
SOURCES = {1, 2}


def test_the_gist_keeps_the_strongest_link_per_neighbour_and_relation() -> None:
    rows = [
        (1, 2, "similar", 0.9),  # between two sources: gone with them
        (1, 5, "similar", 0.4),
        (5, 2, "similar", 0.7),  # the same neighbour through the other source
        (2, 5, "temporal", 0.3),  # another relation to it: a link of its own
        (1, 6, "supersedes", 0.8),  # a source superseded 6: the gist does
        (7, 2, "supersedes", 0.6),  # 7 superseded a source: decided by dates
    ]
    best, incoming = inherited_links(rows, SOURCES, GIST)
    assert best == {
        (5, GIST, "similar"): 0.7,
        (5, GIST, "temporal"): 0.3,
        (GIST, 6, "supersedes"): 0.8,
    }
    assert incoming == [(7, 0.6)]


def test_related_links_are_capped_at_the_best_linked_sources_count() -> None:
    rows = [
        (1, 10, "related", 0.2),
        (1, 11, "related", 0.5),
        (2, 12, "related", 0.9),
        (2, 13, "related", 0.1),
        (2, 14, "related", 0.4),
    ]
    best, _ = inherited_links(rows, SOURCES, GIST)
    # source 2 had three: the gist keeps the three strongest of all five
    assert sorted(k[0] for k in best) == [11, 12, 14]


def test_a_newer_superseder_supersedes_the_gist_an_older_one_does_not() -> None:
    stamps = {GIST: "2026-05-02", 7: "2026-05-03", 8: "2026-05-01"}
    best: dict[tuple[int, int, str], float] = {}
    supersede_gist(best, [(7, 0.6), (8, 0.9)], stamps, GIST)
    assert best == {(7, GIST, "supersedes"): 0.6}
    # the gist already supersedes 7: no link back the other way
    best = {(GIST, 7, "supersedes"): 0.5}
    supersede_gist(best, [(7, 0.6)], stamps, GIST)
    assert best == {(GIST, 7, "supersedes"): 0.5}
