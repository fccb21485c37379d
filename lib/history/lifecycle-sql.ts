// The lifecycle events' table and statements, shared by every backend as lib/history/sql.ts is
// for the terminal records (SQLite in Node, D1 in Workers, PostgreSQL with its placeholders
// numbered by postgres-sql.ts toPostgres): the same SQL text in all three, in the history's
// database. "user" is quoted in the statements, as there.
import { type LifecycleEvent, lifecycleEvent } from "./lifecycle-event.ts";

/**
 * LIFECYCLE_SCHEMA creates the events' table (idempotent: IF NOT EXISTS), keyed by (sandbox_id,
 * kind, n) so an event written twice is kept once, and clustered by that key (WITHOUT ROWID): a
 * sandbox's events are one seek and a few neighbouring rows, sorted by time after the read (a
 * sandbox has a handful, so no second index is kept in step with the key). Times are RFC 3339
 * text in UTC, compared as text, as the records' are; bytes is REAL, as the records' sizes are
 * (PostgreSQL's integer would stop at 2 GiB). Part of lib/history/sql.ts SCHEMA; the Worker's D1
 * gets it from infra/worker/migrations/0004 (a unit test keeps them equal), PostgreSQL from
 * version 3 of POSTGRES_MIGRATIONS.
 */
export const LIFECYCLE_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS sandbox_lifecycle (
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
  ) WITHOUT ROWID`,
];

/** INSERT_EVENT writes an event unless its (sandbox, kind, n) is already there (first write wins). */
export const INSERT_EVENT = `INSERT INTO sandbox_lifecycle (
  sandbox_id, kind, n, at, namespace, pool, pod, team, "user", images, bytes
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (sandbox_id, kind, n) DO NOTHING`;

/**
 * SELECT_EVENTS reads a sandbox's events in the order they happened: by n, then kind ("paused"
 * before "resumed"), since the n-th resume follows the n-th pause and precedes the next. Not by
 * time: times have whole seconds (a pause and its resume may tie) and come from different hosts'
 * clocks (a second of skew would put a resume before its pause).
 */
export const SELECT_EVENTS = "SELECT * FROM sandbox_lifecycle WHERE sandbox_id = ? ORDER BY n, kind, at";

/** eventParams checks an event (lifecycleEvent: a RangeError naming a bad field) and lists INSERT_EVENT's parameters. */
export function eventParams(given: LifecycleEvent): (string | number | null)[] {
  const e = lifecycleEvent(given);
  return [
    e.sandboxId,
    e.kind,
    e.n,
    e.at,
    e.namespace,
    e.poolName,
    e.podName,
    e.team ?? null,
    e.user ?? null,
    JSON.stringify(e.images),
    e.bytes ?? null,
  ];
}

/**
 * eventFromRow turns a sandbox_lifecycle row, as every driver returns it, back into an event
 * (absent optional columns stay absent).
 */
export function eventFromRow(row: Record<string, unknown>): LifecycleEvent {
  const e: LifecycleEvent = {
    sandboxId: String(row.sandbox_id),
    kind: String(row.kind) as LifecycleEvent["kind"],
    n: Number(row.n),
    at: String(row.at),
    namespace: String(row.namespace),
    poolName: String(row.pool),
    podName: String(row.pod),
    images: JSON.parse(String(row.images)) as Record<string, string>,
  };
  if (row.team !== null && row.team !== undefined) e.team = String(row.team);
  if (row.user !== null && row.user !== undefined) e.user = String(row.user);
  if (row.bytes !== null && row.bytes !== undefined) e.bytes = Number(row.bytes);
  return e;
}
