-- 0002: paths excluded from perception at runtime (by the user, or automatically when a path
-- keeps producing rejected events). Effective immediately, kept across restarts.

CREATE TABLE runtime_exclusions (
    pattern    TEXT PRIMARY KEY,
    reason     TEXT NOT NULL DEFAULT '',
    origin     TEXT NOT NULL DEFAULT 'user' CHECK (origin IN ('user', 'auto')),
    created_at TEXT NOT NULL
);
