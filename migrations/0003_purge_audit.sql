-- 0003: a record that a purge happened, never what it removed. No memory ids, no project
-- names, no query text: an id could be matched against logs or terminal scrollback, and a
-- project name can itself be the secret ("acme-acquisition"). Only when, how it was asked
-- for (one id, a list of ids, a query, a whole project) and how many rows went.

CREATE TABLE purge_audit (
    id           INTEGER PRIMARY KEY,
    at           TEXT NOT NULL,
    scope        TEXT NOT NULL CHECK (scope IN ('id', 'ids', 'query', 'project')),
    memories     INTEGER NOT NULL CHECK (memories >= 0),
    raw_memories INTEGER NOT NULL CHECK (raw_memories >= 0),
    amendments   INTEGER NOT NULL CHECK (amendments >= 0),
    associations INTEGER NOT NULL CHECK (associations >= 0),
    queries      INTEGER NOT NULL DEFAULT 0 CHECK (queries >= 0)
);
