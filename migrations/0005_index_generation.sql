-- 0005: a counter that moves with every change the in-memory recall index copies.
--
-- The daemon saves its recall index at a clean shutdown (index/snapshot.py) and loads it at
-- the next start instead of rebuilding (minutes at a million memories). The snapshot records
-- the generation it was taken at; any row written since, by the daemon, another process or
-- an offline tool, moves the generation, and the snapshot is not used. `store` names this
-- database, so a snapshot is never loaded over another store that happens to have reached
-- the same count (a file copied or restored in place).
CREATE TABLE index_generation (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL,
    store TEXT NOT NULL DEFAULT (lower(hex(randomblob(16))))
);
INSERT INTO index_generation (id, value) VALUES (1, 0);

CREATE TRIGGER index_generation_memories_insert AFTER INSERT ON memories FOR EACH ROW
BEGIN UPDATE index_generation SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER index_generation_memories_update AFTER UPDATE ON memories FOR EACH ROW
BEGIN UPDATE index_generation SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER index_generation_memories_delete AFTER DELETE ON memories FOR EACH ROW
BEGIN UPDATE index_generation SET value = value + 1 WHERE id = 1; END;

CREATE TRIGGER index_generation_vectors_insert AFTER INSERT ON memory_vectors FOR EACH ROW
BEGIN UPDATE index_generation SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER index_generation_vectors_update AFTER UPDATE ON memory_vectors FOR EACH ROW
BEGIN UPDATE index_generation SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER index_generation_vectors_delete AFTER DELETE ON memory_vectors FOR EACH ROW
BEGIN UPDATE index_generation SET value = value + 1 WHERE id = 1; END;

CREATE TRIGGER index_generation_associations_insert AFTER INSERT ON associations FOR EACH ROW
BEGIN UPDATE index_generation SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER index_generation_associations_update AFTER UPDATE ON associations FOR EACH ROW
BEGIN UPDATE index_generation SET value = value + 1 WHERE id = 1; END;
CREATE TRIGGER index_generation_associations_delete AFTER DELETE ON associations FOR EACH ROW
BEGIN UPDATE index_generation SET value = value + 1 WHERE id = 1; END;
