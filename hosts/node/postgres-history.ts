import type { ConnectionOptions } from "node:tls";
import pg from "pg";
import type { LifecycleEvent } from "../../lib/history/lifecycle-event.ts";
import { eventFromRow, eventParams, INSERT_EVENT, SELECT_EVENTS } from "../../lib/history/lifecycle-sql.ts";
import { isTransientPostgresError, type Migration, toPostgres } from "../../lib/history/postgres-sql.ts";
import type { SandboxRecord } from "../../lib/history/record.ts";
import {
  fromRow,
  INSERT,
  insertParams,
  page,
  type Row,
  SELECT_ONE,
  selectQuery,
} from "../../lib/history/sql.ts";
import {
  type HistoryPage,
  type HistoryQuery,
  type HistoryStore,
  HistoryUnavailable,
} from "../../lib/history/store.ts";
import type { RunStatements } from "../../lib/usage/sql-store.ts";
import type { Log } from "../../lib/util/log.ts";
import { type MigrateResult, migrate } from "./postgres-migrate.ts";

/** SSL_MODES are libpq's sslmode values this host supports (no "prefer": the driver cannot fall back). */
export const SSL_MODES = ["disable", "require", "verify-ca", "verify-full"] as const;
export type SslMode = (typeof SSL_MODES)[number];

/**
 * PostgresHistorySettings select and tune the PostgreSQL history (AGENTBOX_HISTORY_*, see
 * history-settings.ts). Plain data: they cross into the reconciler's thread, which opens a pool
 * of its own.
 */
export interface PostgresHistorySettings {
  /** url is postgres://user:password@host:port/database; TLS is set by sslmode and ca, not in it. */
  url: string;
  sslmode: SslMode;
  /** ca is the PEM of the CA that signed the server's certificate (else the system's CAs). */
  ca?: string;
  /** poolSize: connections per pool, one pool per thread (the API's and the reconciler's). */
  poolSize: number;
  /** timeoutMs bounds each query, a connect and a wait for a pooled connection. */
  timeoutMs: number;
  /** migrationTimeoutMs bounds each migration statement (MIGRATION_TIMEOUT_MS by default). */
  migrationTimeoutMs?: number;
}

/** MIGRATION_TIMEOUT_MS bounds one migration statement, an index build on a big table included. */
const MIGRATION_TIMEOUT_MS = 300_000;

/** sslOptions turns an sslmode into the driver's TLS options (libpq's meaning of each mode). */
export function sslOptions(s: Pick<PostgresHistorySettings, "sslmode" | "ca">): false | ConnectionOptions {
  const ca = s.ca ? { ca: s.ca } : {};
  if (s.sslmode === "disable") return false;
  // Encrypted, the server unverified: libpq's require (without a root certificate).
  if (s.sslmode === "require") return { rejectUnauthorized: false };
  // The chain is verified, the host name is not.
  if (s.sslmode === "verify-ca")
    return { ...ca, rejectUnauthorized: true, checkServerIdentity: () => undefined };
  return { ...ca, rejectUnauthorized: true };
}

/**
 * PostgresHistoryStore is the history of Node hosts that share one PostgreSQL database: the shared
 * statements of lib/history/sql.ts and lifecycle-sql.ts with numbered placeholders, so records,
 * events, filters and pages are the SQLite store's. put and putEvent are INSERT ... ON CONFLICT DO
 * NOTHING: of any number of hosts putting the same record (or event) at once, exactly one is told
 * "inserted". The schema's migrations run before the first operation (migrate() runs them at
 * start; a database that is down then is migrated by the first operation after it is back). Every
 * query is bounded by timeoutMs on both sides (the server's statement_timeout, the driver's read
 * timeout), so is every connect and every wait for a pooled connection; a connection that timed
 * out is discarded, not reused. Errors that mean "not now" (isTransientPostgresError) are thrown
 * as HistoryUnavailable.
 */
export class PostgresHistoryStore implements HistoryStore {
  private readonly pool: pg.Pool;
  private readonly settings: PostgresHistorySettings;
  private readonly migrations: readonly Migration[] | undefined;
  private ready: Promise<MigrateResult> | undefined;
  private closed: Promise<void> | undefined;

  /** migrations replace POSTGRES_MIGRATIONS (tests of an older or newer release's schema). */
  constructor(settings: PostgresHistorySettings, log: Log, migrations?: readonly Migration[]) {
    this.settings = settings;
    this.migrations = migrations;
    this.pool = new pg.Pool({ ...clientConfig(settings, settings.timeoutMs), max: settings.poolSize });
    // An idle connection that breaks (the database restarts) is dropped; without a listener the
    // pool's error event would end the process.
    this.pool.on("error", (err) =>
      log.warn({ err: err.message }, "a pooled history database connection failed"),
    );
  }

  /**
   * migrate applies the missing schema versions now (the host calls it at start); it may be
   * called again, and concurrently: the first call's outcome is shared, a failed one is retried.
   */
  migrate(): Promise<MigrateResult> {
    this.ready ??= this.runMigrations().catch((e: unknown) => {
      this.ready = undefined;
      throw unavailable(e);
    });
    return this.ready;
  }

  /** runMigrations migrates over a connection of its own, with the migrations' longer timeout. */
  private async runMigrations(): Promise<MigrateResult> {
    const timeoutMs = this.settings.migrationTimeoutMs ?? MIGRATION_TIMEOUT_MS;
    const client = new pg.Client(clientConfig(this.settings, timeoutMs));
    client.on("error", () => {}); // a broken connection fails the query in flight; nothing else to do
    try {
      await client.connect();
      return await migrate(client, ...(this.migrations ? [this.migrations] : []));
    } finally {
      await client.end().catch(() => {});
    }
  }

  private async run(text: string, values: unknown[]): Promise<pg.QueryResult<Row>> {
    await this.migrate();
    try {
      return await this.pool.query<Row>(toPostgres(text), values);
    } catch (e) {
      throw unavailable(e);
    }
  }

  /**
   * runStatements runs other stores' statements (the usage store's, hosts/node/postgres-usage.ts)
   * on this store's pool, one after the other, migrated first and their errors mapped alike.
   */
  readonly runStatements: RunStatements = async (statements) => {
    const out: Record<string, unknown>[][] = [];
    for (const s of statements) out.push((await this.run(s.sql, s.params)).rows);
    return out;
  };

  async put(record: SandboxRecord): Promise<"inserted" | "exists"> {
    const res = await this.run(INSERT, insertParams(record));
    return res.rowCount === 1 ? "inserted" : "exists";
  }

  async get(sandboxId: string): Promise<SandboxRecord | undefined> {
    const row = (await this.run(SELECT_ONE, [sandboxId])).rows[0];
    return row ? fromRow(row) : undefined;
  }

  async query(q: HistoryQuery): Promise<HistoryPage> {
    const { sql, params, limit } = selectQuery(q);
    return page((await this.run(sql, params)).rows, limit);
  }

  async putEvent(e: LifecycleEvent): Promise<"inserted" | "exists"> {
    const res = await this.run(INSERT_EVENT, eventParams(e));
    return res.rowCount === 1 ? "inserted" : "exists";
  }

  async events(sandboxId: string): Promise<LifecycleEvent[]> {
    return (await this.run(SELECT_EVENTS, [sandboxId])).rows.map(eventFromRow);
  }

  /** close ends the pool's connections (after the queries in flight); once, however often called. */
  close(): Promise<void> {
    this.closed ??= this.pool.end();
    return this.closed;
  }
}

/**
 * clientConfig is one connection's settings: statements bounded by the server (statement_timeout)
 * and, a little later, by the driver (a stalled network, not a slow query, trips that one);
 * connects bounded by the store's timeout.
 */
function clientConfig(settings: PostgresHistorySettings, timeoutMs: number): pg.PoolConfig {
  return {
    connectionString: settings.url,
    ssl: sslOptions(settings),
    connectionTimeoutMillis: settings.timeoutMs,
    statement_timeout: timeoutMs,
    query_timeout: timeoutMs + 1000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    application_name: "agentbox-functions",
  };
}

/** unavailable turns a "not now" driver error into HistoryUnavailable; others pass as they are. */
function unavailable(e: unknown): unknown {
  if (e instanceof HistoryUnavailable || !isTransientPostgresError(e)) return e;
  // A refused connect to several addresses is an AggregateError with an empty message.
  const reason = (e as Error).message || String((e as { code?: unknown }).code ?? e);
  return new HistoryUnavailable(`the history database is unavailable: ${reason}`, { cause: e });
}
