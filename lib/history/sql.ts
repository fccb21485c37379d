// The history schema and statements, shared by every backend (SQLite in Node, D1 in Workers, and
// PostgreSQL through lib/history/postgres-sql.ts, which numbers the placeholders): the same SQL
// text runs in all three, so a query means the same thing whichever host answers it. The column
// "user" is quoted in the statements: a keyword in PostgreSQL (CURRENT_USER), a name in SQLite.
import { LIFECYCLE_SCHEMA } from "./lifecycle-sql.ts";
import type { SandboxRecord } from "./record.ts";
import type { HistoryQuery } from "./store.ts";

/**
 * SCHEMA creates the table and one index per HistoryQuery filter (namespace, pool, team, user,
 * team and user together, none or a time range), each ending in the keyset order (terminated_at
 * DESC, sandbox_id DESC): a page of any filter, and of any cursor, is read in order from its index
 * and stops at its limit, without a scan of the table or a sort. It drops the indexes of the first
 * schema, which lacked sandbox_id and so sorted every page; then the lifecycle events' table
 * (lifecycle-sql.ts LIFECYCLE_SCHEMA), so every store of the history's file finds both. Idempotent,
 * and safe on an existing database (IF NOT EXISTS, IF EXISTS). The Worker's D1 gets the same
 * schema from the migrations in infra/worker/migrations (a unit test keeps them equal).
 */
export const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS sandbox_history (
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
  )`,
  "CREATE INDEX IF NOT EXISTS sandbox_history_time ON sandbox_history (terminated_at DESC, sandbox_id DESC)",
  "DROP INDEX IF EXISTS sandbox_history_pool",
  "DROP INDEX IF EXISTS sandbox_history_owner",
  "CREATE INDEX IF NOT EXISTS sandbox_history_namespace_time ON sandbox_history (namespace, terminated_at DESC, sandbox_id DESC)",
  "CREATE INDEX IF NOT EXISTS sandbox_history_pool_time ON sandbox_history (pool, terminated_at DESC, sandbox_id DESC)",
  "CREATE INDEX IF NOT EXISTS sandbox_history_team_time ON sandbox_history (team, terminated_at DESC, sandbox_id DESC)",
  "CREATE INDEX IF NOT EXISTS sandbox_history_user_time ON sandbox_history (user, terminated_at DESC, sandbox_id DESC)",
  "CREATE INDEX IF NOT EXISTS sandbox_history_owner_time ON sandbox_history (team, user, terminated_at DESC, sandbox_id DESC)",
  ...LIFECYCLE_SCHEMA,
];

/** INSERT writes a record unless its sandbox ID is already there (first write wins). */
export const INSERT = `INSERT INTO sandbox_history (
  sandbox_id, namespace, pool, pod, team, "user", claimed_at, started_at, terminated_at, stop_reason,
  failure_reason, failure_message, exit_code, container_id, cpu_millis, memory_bytes, images, metadata
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (sandbox_id) DO NOTHING`;

export const SELECT_ONE = "SELECT * FROM sandbox_history WHERE sandbox_id = ?";

type SqlValue = string | number | null;

/** insertParams lists INSERT's parameters for a record. */
export function insertParams(r: SandboxRecord): SqlValue[] {
  return [
    r.sandboxId,
    r.namespace,
    r.poolName,
    r.podName,
    r.team ?? null,
    r.user ?? null,
    r.claimedAt ?? null,
    r.startedAt ?? null,
    r.terminatedAt,
    r.stopReason,
    r.failureReason ?? null,
    r.failureMessage ?? null,
    r.exitCode ?? null,
    r.containerId ?? null,
    r.cpuMillis,
    r.memoryBytes,
    JSON.stringify(r.containerImages),
    JSON.stringify(r.metadata),
  ];
}

/** Row is a sandbox_history row as both drivers return it. */
export type Row = Record<string, SqlValue>;

/** fromRow turns a row back into a record (absent optional columns stay absent). */
export function fromRow(row: Row): SandboxRecord {
  const opt = (k: string) => (row[k] === null || row[k] === undefined ? undefined : String(row[k]));
  const record: SandboxRecord = {
    sandboxId: String(row.sandbox_id),
    namespace: String(row.namespace),
    poolName: String(row.pool),
    podName: String(row.pod),
    terminatedAt: String(row.terminated_at),
    stopReason: String(row.stop_reason) as SandboxRecord["stopReason"],
    cpuMillis: Number(row.cpu_millis),
    memoryBytes: Number(row.memory_bytes),
    containerImages: JSON.parse(String(row.images)) as Record<string, string>,
    metadata: JSON.parse(String(row.metadata)) as Record<string, string>,
  };
  const optional = {
    team: opt("team"),
    user: opt("user"),
    claimedAt: opt("claimed_at"),
    startedAt: opt("started_at"),
    failureReason: opt("failure_reason"),
    failureMessage: opt("failure_message"),
    containerId: opt("container_id"),
    exitCode: row.exit_code === null || row.exit_code === undefined ? undefined : Number(row.exit_code),
  };
  for (const [k, v] of Object.entries(optional)) if (v !== undefined) Object.assign(record, { [k]: v });
  return record;
}

/** Cursor is the (terminated_at, sandbox_id) of the last record of a page. */
const encodeCursor = (r: SandboxRecord) => btoa(JSON.stringify([r.terminatedAt, r.sandboxId]));
function decodeCursor(c: string): [string, string] | undefined {
  try {
    const v = JSON.parse(atob(c)) as unknown;
    if (!Array.isArray(v) || v.length !== 2) return undefined;
    const [time, id] = v as unknown[];
    return typeof time === "string" && typeof id === "string" ? [time, id] : undefined;
  } catch {
    return undefined;
  }
}

/** selectQuery builds the filtered, keyset-paginated SELECT for q (newest first). */
export function selectQuery(q: HistoryQuery): { sql: string; params: SqlValue[]; limit: number } {
  const where: string[] = [];
  const params: SqlValue[] = [];
  const eq = (col: string, v: string | undefined) => {
    if (v !== undefined) {
      where.push(`${col} = ?`);
      params.push(v);
    }
  };
  eq("namespace", q.namespace);
  eq("pool", q.pool);
  eq("team", q.team);
  eq('"user"', q.user);
  if (q.from) {
    where.push("terminated_at >= ?");
    params.push(q.from);
  }
  if (q.to) {
    where.push("terminated_at < ?");
    params.push(q.to);
  }
  const cursor = q.after ? decodeCursor(q.after) : undefined;
  if (q.after && !cursor) throw new RangeError("after: not a cursor returned by a previous page");
  // A row value, so the index seeks to the cursor (an OR of the two cases would be read from the top).
  if (cursor) {
    where.push("(terminated_at, sandbox_id) < (?, ?)");
    params.push(cursor[0], cursor[1]);
  }
  const limit = Math.min(Math.max(1, Math.trunc(q.limit ?? 100)), 1000);
  const sql = `SELECT * FROM sandbox_history${where.length ? ` WHERE ${where.join(" AND ")}` : ""} ORDER BY terminated_at DESC, sandbox_id DESC LIMIT ${limit + 1}`;
  return { sql, params, limit };
}

/** page trims the one-extra row selectQuery asks for into records and a next cursor. */
export function page(rows: Row[], limit: number): { records: SandboxRecord[]; next?: string } {
  const records = rows.slice(0, limit).map(fromRow);
  const last = records.at(-1);
  return rows.length > limit && last ? { records, next: encodeCursor(last) } : { records };
}
