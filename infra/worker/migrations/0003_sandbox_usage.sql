-- The sandboxes' resource-use samples and one row per sandbox's series: lib/usage/sql.ts
-- USAGE_SCHEMA (a unit test keeps the migrations and it equal). Apply with: npx wrangler d1 migrations apply agentbox-history --remote
CREATE TABLE IF NOT EXISTS sandbox_usage (
    sandbox_id TEXT NOT NULL,
    at TEXT NOT NULL,
    cpu_count INTEGER NOT NULL,
    cpu_used_pct REAL NOT NULL,
    mem_used REAL NOT NULL,
    mem_total REAL NOT NULL,
    mem_cache REAL NOT NULL,
    disk_used REAL NOT NULL,
    disk_total REAL NOT NULL,
    PRIMARY KEY (sandbox_id, at)
  ) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS sandbox_usage_series (
    sandbox_id TEXT PRIMARY KEY,
    samples INTEGER NOT NULL,
    last_at TEXT NOT NULL
  );
CREATE INDEX IF NOT EXISTS sandbox_usage_series_last ON sandbox_usage_series (last_at);
