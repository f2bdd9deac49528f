-- 0004: one current memory per watched file. A watched file is one evolving thing: its
-- memory is amended in place when the file changes (old versions stay in
-- memory_amendments), so this table maps each path to that memory. Keyed by path alone:
-- an absolute path names one file on this machine whatever project it resolves to.

CREATE TABLE file_memories (
    path       TEXT PRIMARY KEY,
    memory_id  TEXT NOT NULL REFERENCES memories (id),
    versions   INTEGER NOT NULL DEFAULT 1 CHECK (versions >= 1),
    deleted_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX file_memories_memory ON file_memories (memory_id);
-- a file moved into a folder inotify did not watch yet arrives as a new file: its content
-- finds the memory it had (the other content_hash index leads with the project)
CREATE INDEX memories_content_hash ON memories (content_hash);

-- Existing stores: each watched path maps to its newest live memory, so the next save of a
-- file amends that memory instead of adding another copy. Older copies are left as they are.
INSERT INTO file_memories (path, memory_id, versions, created_at, updated_at)
SELECT path, id, 1, created_at, updated_at FROM (
    SELECT json_extract(metadata, '$.path') AS path, id, created_at, updated_at,
           row_number() OVER (
               PARTITION BY json_extract(metadata, '$.path') ORDER BY seq DESC
           ) AS newest
    FROM memories
    WHERE source = 'filesystem' AND state IN ('active', 'fading')
      AND json_valid(metadata)
      AND json_extract(metadata, '$.watcher') = 'filesystem'
      AND json_extract(metadata, '$.kind')
          IN ('file_created', 'file_indexed', 'file_modified', 'file_moved')
      AND json_type(metadata, '$.path') = 'text'
)
WHERE newest = 1;
