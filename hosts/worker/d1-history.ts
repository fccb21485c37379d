import type { LifecycleEvent } from "../../lib/history/lifecycle-event.ts";
import { eventFromRow, eventParams, INSERT_EVENT, SELECT_EVENTS } from "../../lib/history/lifecycle-sql.ts";
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
import type { HistoryPage, HistoryQuery, HistoryStore } from "../../lib/history/store.ts";

/** D1Statement is a bound statement of D1Like. */
export interface D1Statement {
  run(): Promise<{ meta: { changes?: number } }>;
  first<T = Record<string, unknown>>(): Promise<T | null>;
  all<T = Record<string, unknown>>(): Promise<{ results: T[] }>;
}

/** D1Like is the slice of Cloudflare's D1Database binding the stores use. */
export interface D1Like {
  prepare(sql: string): {
    bind(...values: unknown[]): D1Statement;
  };
  /** batch runs bound statements in order in one transaction, in one round trip (the usage store). */
  batch<T = Record<string, unknown>>(statements: D1Statement[]): Promise<{ results: T[] }[]>;
}

/** MIGRATE is what to run when the table is missing (README, Deploying to Cloudflare). */
const MIGRATE = "npx wrangler d1 migrations apply agentbox-history --remote";

/**
 * D1HistoryStore is the Worker's history backend: D1 (SQLite at the edge) with the same schema and
 * queries as the Node host's store (lib/history/sql.ts, lifecycle-sql.ts), so records, events and
 * pages are identical. It runs no DDL: the schema is D1's migrations (infra/worker/migrations,
 * equal to SCHEMA), applied at deploy time, so no request pays for schema statements and an index
 * is built once, out of band, not inside the first requests of every isolate. A database without
 * them gets an error that names the command.
 */
export class D1HistoryStore implements HistoryStore {
  private readonly db: D1Like;

  constructor(db: D1Like) {
    this.db = db;
  }

  async put(record: SandboxRecord): Promise<"inserted" | "exists"> {
    const res = await migrated(
      this.db
        .prepare(INSERT)
        .bind(...insertParams(record))
        .run(),
    );
    return res.meta.changes === 1 ? "inserted" : "exists";
  }

  async get(sandboxId: string): Promise<SandboxRecord | undefined> {
    const row = await migrated(this.db.prepare(SELECT_ONE).bind(sandboxId).first<Row>());
    return row ? fromRow(row) : undefined;
  }

  async query(q: HistoryQuery): Promise<HistoryPage> {
    const { sql, params, limit } = selectQuery(q);
    const { results } = await migrated(
      this.db
        .prepare(sql)
        .bind(...params)
        .all<Row>(),
    );
    return page(results, limit);
  }

  async putEvent(e: LifecycleEvent): Promise<"inserted" | "exists"> {
    const params = eventParams(e);
    const res = await migrated(
      this.db
        .prepare(INSERT_EVENT)
        .bind(...params)
        .run(),
      LIFECYCLE_TABLE,
    );
    return res.meta.changes === 1 ? "inserted" : "exists";
  }

  async events(sandboxId: string): Promise<LifecycleEvent[]> {
    const { results } = await migrated(
      this.db.prepare(SELECT_EVENTS).bind(sandboxId).all<Row>(),
      LIFECYCLE_TABLE,
    );
    return results.map(eventFromRow);
  }
}

/** LIFECYCLE_TABLE is the events' table, D1 migration 0004's: a Worker whose D1 lacks it is told to apply it. */
const LIFECYCLE_TABLE = "sandbox_lifecycle";

/** migrated names the missing migration when D1 has no history table (or `table`, another store's). */
export function migrated<T>(statement: Promise<T>, table = "sandbox_history"): Promise<T> {
  return statement.catch((e: unknown) => {
    const missing = /no such table: (\w+)/.exec(String(e))?.[1];
    if (missing?.startsWith(table))
      throw new Error(`the D1 history database has no ${missing} table: apply its migrations (${MIGRATE})`);
    throw e;
  });
}
