-- 0008: a durable log of what the in-memory recall index follows, and the checkpoint it
-- starts from.
--
-- Before this, the recall index snapshot (index/snapshot.py) was saved only at a clean
-- stop and was valid only while no row changed: a crash, or a stop that could not finish
-- the save within its grace period (about 6 s at a million memories, against 5 s),
-- meant a build from SQLite at the next start (24 minutes at a million). Now the daemon
-- saves a checkpoint in the background, and every change after it is noted here by the
-- triggers below, whoever writes (the daemon, another process, an offline tool). A start
-- loads the checkpoint and replays the keys noted since: current values are read again,
-- so replaying is idempotent, and the order of the notes does not matter.
--
-- One row per changed key (a memory's row or text, its vector, an edge): a trigger first
-- deletes the key's older note, so the log holds at most one row per key and its `id`
-- says when the key last changed. Nothing relies on a UNIQUE conflict, whose resolution an
-- outer `INSERT OR IGNORE` would override inside the trigger.
CREATE TABLE index_log (
    id   INTEGER PRIMARY KEY AUTOINCREMENT,
    kind INTEGER NOT NULL,           -- 1 row, 2 text, 3 vector, 4 edge (index/changes.py)
    a    INTEGER NOT NULL,           -- the memory's seq, or an edge's source seq
    b    INTEGER NOT NULL DEFAULT 0, -- an edge's target seq
    c    TEXT NOT NULL DEFAULT ''    -- an edge's relation
);
CREATE INDEX index_log_key ON index_log (a, kind, b, c);

-- The checkpoint the log counts from: the saved snapshot's random token and the log id
-- it was taken at. Notes up to `position` are pruned once the snapshot is on disk; a
-- snapshot whose token is not this one (an older save, a restored backup) is not used.
CREATE TABLE index_checkpoint (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    token    TEXT,
    position INTEGER NOT NULL DEFAULT 0
);
INSERT INTO index_checkpoint (id, position) VALUES (1, 0);

CREATE TRIGGER index_log_memory_insert AFTER INSERT ON memories FOR EACH ROW BEGIN
    DELETE FROM index_log WHERE a = new.seq AND kind = 2 AND b = 0 AND c = '';
    INSERT INTO index_log (kind, a) VALUES (2, new.seq);
END;
CREATE TRIGGER index_log_memory_update AFTER UPDATE ON memories FOR EACH ROW BEGIN
    DELETE FROM index_log WHERE a = new.seq AND kind = 1 AND b = 0 AND c = '';
    INSERT INTO index_log (kind, a) VALUES (1, new.seq);
END;
CREATE TRIGGER index_log_memory_text AFTER UPDATE OF content, summary, concepts, timestamp
    ON memories FOR EACH ROW BEGIN
    DELETE FROM index_log WHERE a = new.seq AND kind = 2 AND b = 0 AND c = '';
    INSERT INTO index_log (kind, a) VALUES (2, new.seq);
END;
CREATE TRIGGER index_log_memory_delete AFTER DELETE ON memories FOR EACH ROW BEGIN
    DELETE FROM index_log WHERE a = old.seq AND kind = 1 AND b = 0 AND c = '';
    INSERT INTO index_log (kind, a) VALUES (1, old.seq);
END;

CREATE TRIGGER index_log_vector_insert AFTER INSERT ON memory_vectors FOR EACH ROW BEGIN
    DELETE FROM index_log WHERE a = new.seq AND kind = 3 AND b = 0 AND c = '';
    INSERT INTO index_log (kind, a) VALUES (3, new.seq);
END;
CREATE TRIGGER index_log_vector_update AFTER UPDATE ON memory_vectors FOR EACH ROW BEGIN
    DELETE FROM index_log WHERE a = new.seq AND kind = 3 AND b = 0 AND c = '';
    INSERT INTO index_log (kind, a) VALUES (3, new.seq);
END;
CREATE TRIGGER index_log_vector_delete AFTER DELETE ON memory_vectors FOR EACH ROW BEGIN
    DELETE FROM index_log WHERE a = old.seq AND kind = 3 AND b = 0 AND c = '';
    INSERT INTO index_log (kind, a) VALUES (3, old.seq);
END;

CREATE TRIGGER index_log_edge_insert AFTER INSERT ON associations FOR EACH ROW BEGIN
    DELETE FROM index_log
    WHERE a = new.source_seq AND kind = 4 AND b = new.target_seq AND c = new.relation;
    INSERT INTO index_log (kind, a, b, c) VALUES (4, new.source_seq, new.target_seq, new.relation);
END;
CREATE TRIGGER index_log_edge_update AFTER UPDATE ON associations FOR EACH ROW BEGIN
    DELETE FROM index_log
    WHERE a = new.source_seq AND kind = 4 AND b = new.target_seq AND c = new.relation;
    INSERT INTO index_log (kind, a, b, c) VALUES (4, new.source_seq, new.target_seq, new.relation);
END;
CREATE TRIGGER index_log_edge_delete AFTER DELETE ON associations FOR EACH ROW BEGIN
    DELETE FROM index_log
    WHERE a = old.source_seq AND kind = 4 AND b = old.target_seq AND c = old.relation;
    INSERT INTO index_log (kind, a, b, c) VALUES (4, old.source_seq, old.target_seq, old.relation);
END;

-- The generation counter of 0005 decided whether a snapshot was still exact; the log and
-- the checkpoint record above replace it. Its table stays for the store's random id.
DROP TRIGGER index_generation_memories_insert;
DROP TRIGGER index_generation_memories_update;
DROP TRIGGER index_generation_memories_delete;
DROP TRIGGER index_generation_vectors_insert;
DROP TRIGGER index_generation_vectors_update;
DROP TRIGGER index_generation_vectors_delete;
DROP TRIGGER index_generation_associations_insert;
DROP TRIGGER index_generation_associations_update;
DROP TRIGGER index_generation_associations_delete;
