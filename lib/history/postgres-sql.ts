// What PostgreSQL needs beyond the shared history SQL (lib/history/sql.ts): numbered placeholders,
// its own schema as versioned migrations, and which of its errors mean "the database cannot answer
// now". The statements themselves are the shared ones; only these dialect differences live here.

/**
 * toPostgres numbers the `?` placeholders of a shared statement ($1, $2, ...), the only change
 * PostgreSQL needs to run it. The shared statements hold no `?` other than placeholders.
 */
export function toPostgres(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/** Migration is one version of the PostgreSQL history schema: statements run in one transaction. */
export interface Migration {
  version: number;
  /** name is kept with the version applied; a database whose name for a version differs is refused. */
  name: string;
  statements: string[];
}

/**
 * POSTGRES_MIGRATIONS is the PostgreSQL history schema, version by version, applied in order at
 * start (hosts/node/postgres-migrate.ts). Version 1 is the SQLite SCHEMA of lib/history/sql.ts
 * translated: the same columns, and the same indexes in the keyset order (terminated_at DESC,
 * sandbox_id DESC). Dialect differences: REAL is double precision; "user" is quoted; every text
 * column compares bytewise (COLLATE "C", SQLite's BINARY), so a page's order and its cursor mean
 * the same in both whatever the database's default collation. Times stay RFC 3339 text, as in
 * SQLite, so the cursor and the from/to filters compare the same strings. A new version is
 * appended, never edited: hosts of the previous release may still run against the database.
 */
export const POSTGRES_MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "sandbox_history",
    statements: [
      `CREATE TABLE sandbox_history (
        sandbox_id text COLLATE "C" PRIMARY KEY,
        namespace text COLLATE "C" NOT NULL,
        pool text COLLATE "C" NOT NULL,
        pod text COLLATE "C" NOT NULL,
        team text COLLATE "C",
        "user" text COLLATE "C",
        claimed_at text COLLATE "C",
        started_at text COLLATE "C",
        terminated_at text COLLATE "C" NOT NULL,
        stop_reason text COLLATE "C" NOT NULL,
        failure_reason text COLLATE "C",
        failure_message text COLLATE "C",
        exit_code integer,
        container_id text COLLATE "C",
        cpu_millis double precision NOT NULL,
        memory_bytes double precision NOT NULL,
        images text COLLATE "C" NOT NULL,
        metadata text COLLATE "C" NOT NULL
      )`,
      "CREATE INDEX sandbox_history_time ON sandbox_history (terminated_at DESC, sandbox_id DESC)",
      "CREATE INDEX sandbox_history_namespace_time ON sandbox_history (namespace, terminated_at DESC, sandbox_id DESC)",
      "CREATE INDEX sandbox_history_pool_time ON sandbox_history (pool, terminated_at DESC, sandbox_id DESC)",
      "CREATE INDEX sandbox_history_team_time ON sandbox_history (team, terminated_at DESC, sandbox_id DESC)",
      'CREATE INDEX sandbox_history_user_time ON sandbox_history ("user", terminated_at DESC, sandbox_id DESC)',
      'CREATE INDEX sandbox_history_owner_time ON sandbox_history (team, "user", terminated_at DESC, sandbox_id DESC)',
    ],
  },
  {
    // The sandboxes' resource-use samples (lib/usage/sql.ts USAGE_SCHEMA, translated as version 1
    // is): samples keyed (sandbox_id, at), one row per series with its count and newest time.
    version: 2,
    name: "sandbox_usage",
    statements: [
      `CREATE TABLE sandbox_usage (
        sandbox_id text COLLATE "C" NOT NULL,
        at text COLLATE "C" NOT NULL,
        cpu_count integer NOT NULL,
        cpu_used_pct double precision NOT NULL,
        mem_used double precision NOT NULL,
        mem_total double precision NOT NULL,
        mem_cache double precision NOT NULL,
        disk_used double precision NOT NULL,
        disk_total double precision NOT NULL,
        PRIMARY KEY (sandbox_id, at)
      )`,
      `CREATE TABLE sandbox_usage_series (
        sandbox_id text COLLATE "C" PRIMARY KEY,
        samples integer NOT NULL,
        last_at text COLLATE "C" NOT NULL
      )`,
      "CREATE INDEX sandbox_usage_series_last ON sandbox_usage_series (last_at)",
    ],
  },
  {
    // The sandboxes' pauses and resumes (lib/history/lifecycle-sql.ts LIFECYCLE_SCHEMA, translated
    // as version 1 is): one row per (sandbox_id, kind, n); bytes double precision, as SQLite's REAL.
    version: 3,
    name: "sandbox_lifecycle",
    statements: [
      `CREATE TABLE sandbox_lifecycle (
        sandbox_id text COLLATE "C" NOT NULL,
        kind text COLLATE "C" NOT NULL,
        n integer NOT NULL,
        at text COLLATE "C" NOT NULL,
        namespace text COLLATE "C" NOT NULL,
        pool text COLLATE "C" NOT NULL,
        pod text COLLATE "C" NOT NULL,
        team text COLLATE "C",
        "user" text COLLATE "C",
        images text COLLATE "C" NOT NULL,
        bytes double precision,
        PRIMARY KEY (sandbox_id, kind, n)
      )`,
    ],
  },
];

/** SCHEMA_TABLE records the versions applied to a database, one row each. */
export const SCHEMA_TABLE = `CREATE TABLE IF NOT EXISTS agentbox_history_schema (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

/**
 * MIGRATION_LOCK is the advisory lock key ("agentbox" in ASCII) every host takes, inside the
 * migration's transaction, before it reads the applied versions: hosts starting at once apply
 * each version once, one after the other, and the lock goes with the transaction.
 */
export const MIGRATION_LOCK = "7018141408466001784";

/** pendingMigrations checks the applied versions against the known ones and lists those to apply. */
export function pendingMigrations(
  applied: readonly { version: number; name: string }[],
  known: readonly Migration[] = POSTGRES_MIGRATIONS,
): Migration[] {
  for (const a of applied) {
    const m = known.find((k) => k.version === a.version);
    if (m && m.name !== a.name)
      throw new Error(
        `the history database's schema version ${a.version} is "${a.name}", this host's is "${m.name}": not the same schema`,
      );
  }
  const done = new Set(applied.map((a) => a.version));
  return known.filter((m) => !done.has(m.version));
}

/** TRANSIENT_CLASSES are SQLSTATE classes that mean "not now": connection, resources, operator, system, rollback. */
const TRANSIENT_CLASSES = new Set(["08", "53", "57", "58", "40"]);
/** TRANSIENT_NET are the socket errors of a database that is down or unreachable. */
const TRANSIENT_NET = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
]);
/** TRANSIENT_MESSAGES are the driver's own words for a lost connection or a timeout (no code). */
const TRANSIENT_MESSAGES =
  /timeout exceeded when trying to connect|Connection terminated|Query read timeout|not queryable|Connection ended/i;

/**
 * isTransientPostgresError tells whether a PostgreSQL driver error means the database cannot
 * answer now (down, unreachable, restarting, out of connections, a timeout, a lock wait, a
 * serialization failure) rather than a fault such as a wrong password, a missing database or bad
 * SQL, which a retry would not cure.
 */
export function isTransientPostgresError(e: unknown): boolean {
  if (typeof e !== "object" || e === null) return false;
  const { code, message, errors } = e as { code?: unknown; message?: unknown; errors?: unknown };
  if (typeof code === "string") {
    if (TRANSIENT_NET.has(code) || code === "55P03") return true;
    if (/^[0-9A-Z]{5}$/.test(code)) return TRANSIENT_CLASSES.has(code.slice(0, 2));
  }
  if (Array.isArray(errors) && errors.some(isTransientPostgresError)) return true;
  return typeof message === "string" && TRANSIENT_MESSAGES.test(message);
}
