-- 0001: the memory core. Applied in one transaction; PRAGMA user_version tracks it.

CREATE TABLE system_meta (
    key        TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- Every observation, verbatim after redaction. Never deleted except by an explicit purge.
CREATE TABLE raw_memories (
    id           TEXT PRIMARY KEY,
    content      TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    source       TEXT NOT NULL,
    type         TEXT,
    project      TEXT NOT NULL DEFAULT '',
    timestamp    TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    metadata     TEXT NOT NULL DEFAULT '{}',
    status       TEXT NOT NULL DEFAULT 'accepted'
                 CHECK (status IN ('accepted', 'encoded', 'reinforced', 'failed')),
    memory_id    TEXT,
    attempts     INTEGER NOT NULL DEFAULT 0,
    error        TEXT
);
CREATE INDEX raw_memories_status ON raw_memories (status);

-- Encoded memories. seq is the integer key used by FTS, vectors and the association graph;
-- id is the public identifier.
CREATE TABLE memories (
    seq              INTEGER PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    raw_id           TEXT NOT NULL REFERENCES raw_memories (id),
    content          TEXT NOT NULL,
    content_hash     TEXT NOT NULL,
    summary          TEXT NOT NULL,
    concepts         TEXT NOT NULL DEFAULT '[]',
    type             TEXT NOT NULL
                     CHECK (type IN ('decision', 'error', 'insight', 'learning', 'general', 'handoff')),
    source           TEXT NOT NULL,
    project          TEXT NOT NULL DEFAULT '',
    significance     REAL NOT NULL CHECK (significance BETWEEN 0 AND 1),
    salience         REAL NOT NULL CHECK (salience BETWEEN 0 AND 1),
    utility          REAL NOT NULL DEFAULT 1.0 CHECK (utility > 0),
    state            TEXT NOT NULL DEFAULT 'active'
                     CHECK (state IN ('active', 'fading', 'archived', 'merged')),
    access_count     INTEGER NOT NULL DEFAULT 0,
    last_accessed_at TEXT,
    timestamp        TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    metadata         TEXT NOT NULL DEFAULT '{}',
    merged_into      TEXT,
    embedded         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX memories_project_hash ON memories (project, content_hash);
CREATE INDEX memories_project_seq ON memories (project, seq);
CREATE INDEX memories_state ON memories (state);
CREATE INDEX memories_timestamp ON memories (timestamp);
CREATE INDEX memories_pending ON memories (embedded) WHERE embedded = 0;

-- Full text over content, summary, concepts and the date written out, so "May 2023" or
-- "Tuesday" can match. Porter stemming over unicode61 with diacritics folded.
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content, summary, concepts, when_text,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Vectors: SQLite is the source of truth; the daemon searches an in-memory copy.
CREATE TABLE memory_vectors (
    seq    INTEGER PRIMARY KEY REFERENCES memories (seq),
    model  TEXT NOT NULL,
    dim    INTEGER NOT NULL,
    vector BLOB NOT NULL
);

-- Typed weighted edges, stored once per unordered pair and relation.
CREATE TABLE associations (
    source_seq       INTEGER NOT NULL REFERENCES memories (seq),
    target_seq       INTEGER NOT NULL REFERENCES memories (seq),
    relation         TEXT NOT NULL
                     CHECK (relation IN ('similar', 'caused_by', 'part_of', 'contradicts',
                                         'temporal', 'reinforces', 'supersedes')),
    strength         REAL NOT NULL CHECK (strength BETWEEN 0 AND 1),
    activation_count INTEGER NOT NULL DEFAULT 0,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    PRIMARY KEY (source_seq, target_seq, relation),
    CHECK (source_seq <> target_seq)
) WITHOUT ROWID;
CREATE INDEX associations_target ON associations (target_seq);

-- Every recall, so feedback can name the results and the links that were traversed.
CREATE TABLE retrieval_queries (
    id         TEXT PRIMARY KEY,
    query      TEXT NOT NULL,
    filters    TEXT NOT NULL DEFAULT '{}',
    result_ids TEXT NOT NULL DEFAULT '[]',
    edges      TEXT NOT NULL DEFAULT '[]',
    took_ms    REAL NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE retrieval_feedback (
    id         INTEGER PRIMARY KEY,
    query_id   TEXT NOT NULL REFERENCES retrieval_queries (id),
    quality    TEXT NOT NULL CHECK (quality IN ('helpful', 'partial', 'irrelevant')),
    memory_ids TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL
);
CREATE INDEX retrieval_feedback_query ON retrieval_feedback (query_id);

-- Every content change keeps the old text.
CREATE TABLE memory_amendments (
    id          INTEGER PRIMARY KEY,
    memory_id   TEXT NOT NULL REFERENCES memories (id),
    old_content TEXT NOT NULL,
    new_content TEXT NOT NULL,
    reason      TEXT,
    created_at  TEXT NOT NULL
);
CREATE INDEX memory_amendments_memory ON memory_amendments (memory_id);
