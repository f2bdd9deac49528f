-- 0009: passage vectors, a memory's best sentence as a vector entry point.
--
-- One row per embedded memory and model: `vectors` holds `count` unit vectors of `dim`
-- float16 values each (count * dim * 2 bytes), one per passage (encoding/passages.py).
-- A memory of fewer than two sentences has a row with count 0: the row says its passages
-- were computed, so a backfill (app/reembed.py) can find the memories that lack them.
-- float16 halves the disk of the passages (3-4 per memory measured on the benchmarks),
-- and cosine rankings do not move at that precision; the whole vectors stay float32.
CREATE TABLE memory_passages (
    seq     INTEGER PRIMARY KEY REFERENCES memories (seq),
    model   TEXT NOT NULL,
    dim     INTEGER NOT NULL,
    count   INTEGER NOT NULL CHECK (count >= 0),
    vectors BLOB NOT NULL
);

-- The durable index log (0008) notes a passage change under the memory's vector key
-- (kind 3): a replay reads the whole vector and the passages of that memory again.
CREATE TRIGGER index_log_passage_insert AFTER INSERT ON memory_passages FOR EACH ROW BEGIN
    DELETE FROM index_log WHERE a = new.seq AND kind = 3 AND b = 0 AND c = '';
    INSERT INTO index_log (kind, a) VALUES (3, new.seq);
END;
CREATE TRIGGER index_log_passage_update AFTER UPDATE ON memory_passages FOR EACH ROW BEGIN
    DELETE FROM index_log WHERE a = new.seq AND kind = 3 AND b = 0 AND c = '';
    INSERT INTO index_log (kind, a) VALUES (3, new.seq);
END;
CREATE TRIGGER index_log_passage_delete AFTER DELETE ON memory_passages FOR EACH ROW BEGIN
    DELETE FROM index_log WHERE a = old.seq AND kind = 3 AND b = 0 AND c = '';
    INSERT INTO index_log (kind, a) VALUES (3, old.seq);
END;
