import type { SandboxRecord } from "../../lib/history/record.ts";
import {
  fromRow,
  INSERT,
  insertParams,
  page,
  type Row,
  SCHEMA,
  SELECT_ONE,
  selectQuery,
} from "../../lib/history/sql.ts";
import type { HistoryPage, HistoryQuery, HistoryStore } from "../../lib/history/store.ts";

/** D1Like is the slice of Cloudflare's D1Database binding the store uses. */
export interface D1Like {
  prepare(sql: string): {
    bind(...values: unknown[]): {
      run(): Promise<{ meta: { changes?: number } }>;
      first<T = Record<string, unknown>>(): Promise<T | null>;
      all<T = Record<string, unknown>>(): Promise<{ results: T[] }>;
    };
  };
  exec(sql: string): Promise<unknown>;
}

/**
 * D1HistoryStore is the Worker's history backend: D1 (SQLite at the edge) with the same schema and
 * queries as the Node host's store (lib/history/sql.ts), so records and pages are identical. The
 * schema is applied once per isolate (CREATE … IF NOT EXISTS), or ahead of time as a migration.
 */
export class D1HistoryStore implements HistoryStore {
  private ready: Promise<void> | undefined;
  private readonly db: D1Like;

  constructor(db: D1Like) {
    this.db = db;
  }

  private schema(): Promise<void> {
    this.ready ??= (async () => {
      for (const stmt of SCHEMA) await this.db.prepare(stmt).bind().run();
    })().catch((e: unknown) => {
      this.ready = undefined;
      throw e;
    });
    return this.ready;
  }

  async put(record: SandboxRecord): Promise<"inserted" | "exists"> {
    await this.schema();
    const res = await this.db
      .prepare(INSERT)
      .bind(...insertParams(record))
      .run();
    return res.meta.changes === 1 ? "inserted" : "exists";
  }

  async get(sandboxId: string): Promise<SandboxRecord | undefined> {
    await this.schema();
    const row = await this.db.prepare(SELECT_ONE).bind(sandboxId).first<Row>();
    return row ? fromRow(row) : undefined;
  }

  async query(q: HistoryQuery): Promise<HistoryPage> {
    await this.schema();
    const { sql, params, limit } = selectQuery(q);
    const { results } = await this.db
      .prepare(sql)
      .bind(...params)
      .all<Row>();
    return page(results, limit);
  }
}
