-- 0007: the tables of the thinking half, part 2 (issue 13) and of the MCP server (issue 14):
-- abstractions (patterns, principles, axioms) with their evidence, the provenance of
-- insights, metacognition's observations, the reactor's fire log, MCP tool usage; and a new
-- association relation, `related`, for links the dreamer draws between memories that share
-- entities or concepts across episodes and projects.
--
-- Abstraction titles and descriptions are built from stored (already redacted) text; a purge
-- removes a purged memory's evidence rows (store/purge.py), and an abstraction left with no
-- evidence is archived by the next abstraction cycle.

-- SQLite cannot change a CHECK constraint in place: rebuild `associations` with the new
-- relation (the standard 12-step rebuild; rows, indexes and triggers carried over).
CREATE TABLE associations_new (
    source_seq       INTEGER NOT NULL REFERENCES memories (seq),
    target_seq       INTEGER NOT NULL REFERENCES memories (seq),
    relation         TEXT NOT NULL
                     CHECK (relation IN ('similar', 'caused_by', 'part_of', 'contradicts',
                                         'temporal', 'reinforces', 'supersedes', 'related')),
    strength         REAL NOT NULL CHECK (strength BETWEEN 0 AND 1),
    activation_count INTEGER NOT NULL DEFAULT 0,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    PRIMARY KEY (source_seq, target_seq, relation),
    CHECK (source_seq <> target_seq)
) WITHOUT ROWID;
INSERT INTO associations_new
    (source_seq, target_seq, relation, strength, activation_count, created_at, updated_at)
    SELECT source_seq, target_seq, relation, strength, activation_count, created_at, updated_at
    FROM associations;
DROP TABLE associations;
ALTER TABLE associations_new RENAME TO associations;
CREATE INDEX associations_target ON associations (target_seq);
CREATE INDEX associations_supersedes ON associations (source_seq, target_seq)
    WHERE relation = 'supersedes';
CREATE TRIGGER index_generation_associations_insert AFTER INSERT ON associations FOR EACH ROW
BEGIN UPDATE index_generation SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER index_generation_associations_update AFTER UPDATE ON associations FOR EACH ROW
BEGIN UPDATE index_generation SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER index_generation_associations_delete AFTER DELETE ON associations FOR EACH ROW
BEGIN UPDATE index_generation SET value = value + 1 WHERE id = 1; END;

-- Patterns (recurring themes over memories), principles (over patterns) and axioms (over
-- principles) in one table. `strength` grows with evidence and is bounded; `confidence` is
-- the judge's (heuristic or LLM) belief; `grounding` the share of evidence still live
-- (active or fading memories, active children). Nothing is deleted: a faded abstraction is
-- demoted, then archived; a dismissed one stays dismissed; a near-duplicate is merged into
-- the older one (`merged_into`).
CREATE TABLE abstractions (
    id           TEXT PRIMARY KEY,
    level        TEXT NOT NULL CHECK (level IN ('pattern', 'principle', 'axiom')),
    title        TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    concepts     TEXT NOT NULL DEFAULT '[]',
    project      TEXT NOT NULL DEFAULT '',
    strength     REAL NOT NULL DEFAULT 0 CHECK (strength BETWEEN 0 AND 1),
    confidence   REAL NOT NULL DEFAULT 0 CHECK (confidence BETWEEN 0 AND 1),
    grounding    REAL NOT NULL DEFAULT 1 CHECK (grounding BETWEEN 0 AND 1),
    state        TEXT NOT NULL DEFAULT 'active'
                 CHECK (state IN ('active', 'demoted', 'archived', 'dismissed', 'merged')),
    merged_into  TEXT REFERENCES abstractions (id),
    described_by TEXT NOT NULL DEFAULT 'heuristic' CHECK (described_by IN ('heuristic', 'llm')),
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL
);
CREATE INDEX abstractions_level_state ON abstractions (level, state);

-- A pattern's evidence: the memories it was found in.
CREATE TABLE abstraction_evidence (
    abstraction_id TEXT NOT NULL REFERENCES abstractions (id),
    memory_seq     INTEGER NOT NULL REFERENCES memories (seq),
    weight         REAL NOT NULL DEFAULT 1 CHECK (weight BETWEEN 0 AND 1),
    added_at       TEXT NOT NULL,
    PRIMARY KEY (abstraction_id, memory_seq)
) WITHOUT ROWID;
CREATE INDEX abstraction_evidence_memory ON abstraction_evidence (memory_seq);

-- A principle's patterns, an axiom's principles.
CREATE TABLE abstraction_sources (
    parent_id TEXT NOT NULL REFERENCES abstractions (id),
    child_id  TEXT NOT NULL REFERENCES abstractions (id),
    added_at  TEXT NOT NULL,
    PRIMARY KEY (parent_id, child_id),
    CHECK (parent_id <> child_id)
) WITHOUT ROWID;
CREATE INDEX abstraction_sources_child ON abstraction_sources (child_id);

-- Which memories an insight (a memory of type 'insight' written by the dreamer) came from.
CREATE TABLE insight_sources (
    insight_seq INTEGER NOT NULL REFERENCES memories (seq),
    source_seq  INTEGER NOT NULL REFERENCES memories (seq),
    PRIMARY KEY (insight_seq, source_seq),
    CHECK (insight_seq <> source_seq)
) WITHOUT ROWID;
CREATE INDEX insight_sources_source ON insight_sources (source_seq);

-- Every audit of metacognition: what was measured, against which threshold, and what (if
-- anything) was done about it.
CREATE TABLE meta_observations (
    id        INTEGER PRIMARY KEY,
    at        TEXT NOT NULL,
    kind      TEXT NOT NULL,
    severity  TEXT NOT NULL CHECK (severity IN ('ok', 'warning', 'alert')),
    value     REAL,
    threshold REAL,
    detail    TEXT NOT NULL DEFAULT '{}',
    action    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX meta_observations_kind_at ON meta_observations (kind, at);

-- Every time a reactor rule fired (a firing its cooldown held back is not recorded).
CREATE TABLE reactor_fires (
    id         INTEGER PRIMARY KEY,
    rule       TEXT NOT NULL,
    at         TEXT NOT NULL,
    event_type TEXT NOT NULL,
    action     TEXT NOT NULL,
    ok         INTEGER NOT NULL CHECK (ok IN (0, 1)),
    error      TEXT
);
CREATE INDEX reactor_fires_rule ON reactor_fires (rule, id);

-- Every MCP tool call (issue 14): which tool, which client, how long, whether it worked.
CREATE TABLE tool_usage (
    id         INTEGER PRIMARY KEY,
    at         TEXT NOT NULL,
    tool       TEXT NOT NULL,
    client     TEXT NOT NULL DEFAULT '',
    project    TEXT NOT NULL DEFAULT '',
    latency_ms REAL NOT NULL CHECK (latency_ms >= 0),
    ok         INTEGER NOT NULL CHECK (ok IN (0, 1)),
    error      TEXT
);
CREATE INDEX tool_usage_at ON tool_usage (at);
