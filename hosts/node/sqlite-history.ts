import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";
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
import { retryDelay } from "../../lib/util/backoff.ts";

/** BUSY_WAIT_MS: how long one statement may block its thread waiting for the other's lock. */
const BUSY_WAIT_MS = 20;
/** PUT_DEADLINE_MS: how long a write keeps retrying a busy database before it fails. */
const PUT_DEADLINE_MS = 10_000;

/** isBusy: SQLite said the database is locked by another connection (SQLITE_BUSY). */
const isBusy = (e: unknown) =>
  (e as { errcode?: number }).errcode === 5 || /database is locked/.test(String(e));

/**
 * SqliteHistoryStore is the Node host's history backend: an embedded SQLite file (Node's
 * node:sqlite), WAL mode so readers never block the writer. ":memory:" gives a throwaway store.
 * node:sqlite is synchronous, and the API's thread and the reconciler's each hold a connection:
 * a write that finds the other's lock blocks its thread's event loop for at most BUSY_WAIT_MS,
 * then waits off the thread and tries again (until PUT_DEADLINE_MS), so a long write or
 * checkpoint in one thread never stalls the other's requests for seconds.
 */
export class SqliteHistoryStore implements HistoryStore {
  private readonly db: DatabaseSync;

  constructor(path: string) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.db = new DatabaseSync(path);
    this.db.exec(`PRAGMA journal_mode = WAL; PRAGMA busy_timeout = ${BUSY_WAIT_MS};`);
    for (const stmt of SCHEMA) this.db.exec(stmt);
  }

  async put(record: SandboxRecord): Promise<"inserted" | "exists"> {
    const deadline = Date.now() + PUT_DEADLINE_MS;
    for (let attempt = 0; ; attempt++) {
      try {
        const res = this.db.prepare(INSERT).run(...insertParams(record));
        return Number(res.changes) === 1 ? "inserted" : "exists";
      } catch (e) {
        if (!isBusy(e) || Date.now() >= deadline) throw e;
        await new Promise((r) => setTimeout(r, retryDelay(attempt)));
      }
    }
  }

  async get(sandboxId: string): Promise<SandboxRecord | undefined> {
    const row = this.db.prepare(SELECT_ONE).get(sandboxId) as Row | undefined;
    return row ? fromRow(row) : undefined;
  }

  async query(q: HistoryQuery): Promise<HistoryPage> {
    const { sql, params, limit } = selectQuery(q);
    return page(this.db.prepare(sql).all(...params) as Row[], limit);
  }

  close(): void {
    this.db.close();
  }
}
