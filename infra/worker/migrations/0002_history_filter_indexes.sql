-- One index per /v1/history filter, each in the keyset order (terminated_at DESC, sandbox_id
-- DESC), replacing 0001's two composite indexes: lib/history/sql.ts SCHEMA (a unit test keeps the
-- migrations and it equal). Apply with: npx wrangler d1 migrations apply agentbox-history --remote
DROP INDEX IF EXISTS sandbox_history_pool;
DROP INDEX IF EXISTS sandbox_history_owner;
CREATE INDEX IF NOT EXISTS sandbox_history_namespace_time ON sandbox_history (namespace, terminated_at DESC, sandbox_id DESC);
CREATE INDEX IF NOT EXISTS sandbox_history_pool_time ON sandbox_history (pool, terminated_at DESC, sandbox_id DESC);
CREATE INDEX IF NOT EXISTS sandbox_history_team_time ON sandbox_history (team, terminated_at DESC, sandbox_id DESC);
CREATE INDEX IF NOT EXISTS sandbox_history_user_time ON sandbox_history (user, terminated_at DESC, sandbox_id DESC);
CREATE INDEX IF NOT EXISTS sandbox_history_owner_time ON sandbox_history (team, user, terminated_at DESC, sandbox_id DESC);
