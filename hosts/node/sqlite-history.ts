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
/** BUSY_DEADLINE_MS: how long an operation keeps retrying a busy database before it fails. */
const BUSY_DEADLINE_MS = 10_000;

/** isBusy: SQLite said the database is locked by another connection (SQLITE_BUSY). */
const isBusy = (e: unknown) =>
  (e as { errcode?: number }).errcode === 5 || /database is locked/.test(String(e));

/**
 * SqliteHistoryStore is the Node host's history backend: an embedded SQLite file (Node's
 * node:sqlite), WAL mode so readers never block the writer. ":memory:" gives a throwaway store.
 * node:sqlite is synchronous, and the API's thread and the reconciler's each hold a connection:
 * a statement that finds the other's lock blocks its thread's event loop for at most BUSY_WAIT_MS,
 * then waits off the thread and tries again (until BUSY_DEADLINE_MS), so a long write, index
 * build or checkpoint in one thread never stalls the other's requests for seconds. That holds
 * for reads too: in WAL a reader waits for no writer, but the journal-mode switch and the schema
 * (a new file, a new index) need the write lock, and SQLite still answers SQLITE_BUSY to readers
 * during another connection's recovery or exclusive lock. The schema is applied when the store
 * opens, or, if the other thread holds the lock then, before its first operation.
 */
export class SqliteHistoryStore implements HistoryStore {
  private readonly db: DatabaseSync;
  private ready: Promise<void> | undefined;

  constructor(path: string) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.db = new DatabaseSync(path);
    // The busy timeout first: every later statement, the journal-mode switch included, gets it.
    this.db.exec(`PRAGMA busy_timeout = ${BUSY_WAIT_MS}`);
    try {
      this.applySchema();
      this.ready = Promise.resolve();
    } catch (e) {
      if (!isBusy(e)) throw e;
    }
  }

  /** applySchema switches to WAL and creates what is missing (no lock taken when nothing is). */
  private applySchema(): void {
    this.db.exec("PRAGMA journal_mode = WAL");
    for (const stmt of SCHEMA) this.db.exec(stmt);
  }

  /** unlocked runs op, waiting off the thread while another connection holds the lock it needs. */
  private async unlocked<T>(op: () => T): Promise<T> {
    const deadline = Date.now() + BUSY_DEADLINE_MS;
    this.ready ??= this.retryBusy(() => this.applySchema(), deadline).catch((e: unknown) => {
      this.ready = undefined;
      throw e;
    });
    await this.ready;
    return this.retryBusy(op, deadline);
  }

  private async retryBusy<T>(op: () => T, deadline: number): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return op();
      } catch (e) {
        if (!isBusy(e) || Date.now() >= deadline) throw e;
        await new Promise((r) => setTimeout(r, retryDelay(attempt)));
      }
    }
  }

  async put(record: SandboxRecord): Promise<"inserted" | "exists"> {
    const res = await this.unlocked(() => this.db.prepare(INSERT).run(...insertParams(record)));
    return Number(res.changes) === 1 ? "inserted" : "exists";
  }

  async get(sandboxId: string): Promise<SandboxRecord | undefined> {
    const row = await this.unlocked(() => this.db.prepare(SELECT_ONE).get(sandboxId) as Row | undefined);
    return row ? fromRow(row) : undefined;
  }

  async query(q: HistoryQuery): Promise<HistoryPage> {
    const { sql, params, limit } = selectQuery(q);
    return page(await this.unlocked(() => this.db.prepare(sql).all(...params) as Row[]), limit);
  }

  close(): void {
    this.db.close();
  }
}
