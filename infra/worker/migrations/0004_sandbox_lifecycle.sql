-- The sandboxes' lifecycle events, each pause and each resume, one row per (sandbox_id, kind, n):
-- lib/history/lifecycle-sql.ts LIFECYCLE_SCHEMA (a unit test keeps the migrations and it equal).
-- Apply with: npx wrangler d1 migrations apply agentbox-history --remote
CREATE TABLE IF NOT EXISTS sandbox_lifecycle (
    sandbox_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    n INTEGER NOT NULL,
    at TEXT NOT NULL,
    namespace TEXT NOT NULL,
    pool TEXT NOT NULL,
    pod TEXT NOT NULL,
    team TEXT,
    user TEXT,
    images TEXT NOT NULL,
    bytes REAL,
    PRIMARY KEY (sandbox_id, kind, n)
  ) WITHOUT ROWID;
