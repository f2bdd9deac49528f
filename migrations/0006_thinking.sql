-- 0006: the tables of the thinking half, part 1 (issue 12): LLM usage, episodes,
-- consolidation history and merges, and the run log of every background agent.
--
-- None of these rows carries memory content of its own except episode titles and summaries,
-- which are built from stored (already redacted) text, so a purge reaches them through
-- `episode_memories` and `memory_merges` (store/purge.py).

-- One row per LLM call, successful or not: what it cost and how long it took.
CREATE TABLE llm_usage (
    id                INTEGER PRIMARY KEY,
    at                TEXT NOT NULL,
    operation         TEXT NOT NULL,
    agent             TEXT NOT NULL DEFAULT '',
    provider          TEXT NOT NULL,
    model             TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    latency_ms        REAL NOT NULL CHECK (latency_ms >= 0),
    success           INTEGER NOT NULL CHECK (success IN (0, 1)),
    error             TEXT,
    cost_usd          REAL NOT NULL DEFAULT 0 CHECK (cost_usd >= 0)
);
CREATE INDEX llm_usage_at ON llm_usage (at);

-- A stretch of work in one project: opened by its first memory, closed after inactivity or
-- a maximum span. Times are the memories' own timestamps (imports group by when things
-- happened, not by when they arrived).
CREATE TABLE episodes (
    id           TEXT PRIMARY KEY,
    project      TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('open', 'closed')),
    title        TEXT NOT NULL DEFAULT '',
    summary      TEXT NOT NULL DEFAULT '',
    concepts     TEXT NOT NULL DEFAULT '[]',
    files        TEXT NOT NULL DEFAULT '[]',
    commands     TEXT NOT NULL DEFAULT '[]',
    started_at   TEXT NOT NULL,
    ended_at     TEXT NOT NULL,
    salience     REAL NOT NULL DEFAULT 0 CHECK (salience BETWEEN 0 AND 1),
    memory_count INTEGER NOT NULL DEFAULT 0 CHECK (memory_count >= 0),
    described_by TEXT NOT NULL DEFAULT 'heuristic' CHECK (described_by IN ('heuristic', 'llm')),
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    closed_at    TEXT
);
CREATE INDEX episodes_project_started ON episodes (project, started_at);
CREATE INDEX episodes_started ON episodes (started_at);
CREATE INDEX episodes_open ON episodes (project) WHERE state = 'open';

-- Which episode each memory belongs to (at most one).
CREATE TABLE episode_memories (
    episode_id TEXT NOT NULL REFERENCES episodes (id),
    memory_seq INTEGER NOT NULL UNIQUE REFERENCES memories (seq),
    PRIMARY KEY (episode_id, memory_seq)
) WITHOUT ROWID;

-- The episoder's watermark over memories (by seq) lives in system_meta.

-- Every consolidation cycle: when, why and what it changed.
CREATE TABLE consolidation_history (
    id               INTEGER PRIMARY KEY,
    started_at       TEXT NOT NULL,
    finished_at      TEXT NOT NULL,
    trigger          TEXT NOT NULL,
    counts           TEXT NOT NULL DEFAULT '{}',
    budget_exhausted INTEGER NOT NULL DEFAULT 0 CHECK (budget_exhausted IN (0, 1))
);

-- A merge of near-duplicates into a gist memory, one row per source, so an unmerge restores
-- each source's own earlier state.
CREATE TABLE memory_merges (
    gist_seq       INTEGER NOT NULL REFERENCES memories (seq),
    source_seq     INTEGER NOT NULL REFERENCES memories (seq),
    previous_state TEXT NOT NULL CHECK (previous_state IN ('active', 'fading', 'archived')),
    merged_at      TEXT NOT NULL,
    unmerged_at    TEXT,
    PRIMARY KEY (gist_seq, source_seq)
) WITHOUT ROWID;
CREATE INDEX memory_merges_source ON memory_merges (source_seq);

-- Every cycle of every background agent (scheduled or on demand): GET /api/v1/agents shows
-- the last one per agent, across restarts.
CREATE TABLE agent_runs (
    id          INTEGER PRIMARY KEY,
    agent       TEXT NOT NULL,
    trigger     TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT,
    ok          INTEGER CHECK (ok IN (0, 1)),
    summary     TEXT NOT NULL DEFAULT '{}',
    error       TEXT
);
CREATE INDEX agent_runs_agent ON agent_runs (agent, id);

-- `supersedes` edges are directed (source = the newer memory, target = the older one it
-- replaces) and few; recall keeps them in memory, read through this partial index.
CREATE INDEX associations_supersedes ON associations (source_seq, target_seq)
    WHERE relation = 'supersedes';
