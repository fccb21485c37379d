-- The sandbox history table of the Worker's D1 database; with the later migrations, lib/history/sql.ts
-- SCHEMA (a unit test keeps them equal). Apply with: npx wrangler d1 migrations apply agentbox-history --remote
CREATE TABLE IF NOT EXISTS sandbox_history (
    sandbox_id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    pool TEXT NOT NULL,
    pod TEXT NOT NULL,
    team TEXT,
    user TEXT,
    claimed_at TEXT,
    started_at TEXT,
    terminated_at TEXT NOT NULL,
    stop_reason TEXT NOT NULL,
    failure_reason TEXT,
    failure_message TEXT,
    exit_code INTEGER,
    container_id TEXT,
    cpu_millis REAL NOT NULL,
    memory_bytes REAL NOT NULL,
    images TEXT NOT NULL,
    metadata TEXT NOT NULL
  );
CREATE INDEX IF NOT EXISTS sandbox_history_time ON sandbox_history (terminated_at DESC, sandbox_id DESC);
CREATE INDEX IF NOT EXISTS sandbox_history_pool ON sandbox_history (namespace, pool, terminated_at DESC);
CREATE INDEX IF NOT EXISTS sandbox_history_owner ON sandbox_history (team, user, terminated_at DESC);
