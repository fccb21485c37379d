import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { retryDelay } from "../../lib/util/backoff.ts";

/** BUSY_WAIT_MS: how long one statement may block its thread waiting for the other's lock. */
const BUSY_WAIT_MS = 20;
/** BUSY_DEADLINE_MS: how long an operation keeps retrying a busy database before it fails. */
const BUSY_DEADLINE_MS = 10_000;

/** isBusy: SQLite said the database is locked by another connection (SQLITE_BUSY). */
const isBusy = (e: unknown) =>
  (e as { errcode?: number }).errcode === 5 || /database is locked/.test(String(e));

/**
 * SqliteDatabase is one thread's connection to the Node host's SQLite file (Node's node:sqlite),
 * shared by the stores kept in it (the history, the usage samples): WAL mode so readers never
 * block the writer. ":memory:" gives a throwaway database. node:sqlite is synchronous, and the
 * API's thread and the reconciler's each hold a connection: a statement that finds the other's
 * lock blocks its thread's event loop for at most BUSY_WAIT_MS, then waits off the thread and
 * tries again (until BUSY_DEADLINE_MS), so a long write, index build or checkpoint in one thread
 * never stalls the other's requests for seconds. That holds for reads too: in WAL a reader waits
 * for no writer, but the journal-mode switch and the schema (a new file, a new index) need the
 * write lock, and SQLite still answers SQLITE_BUSY to readers during another connection's
 * recovery or exclusive lock. The schema is applied when the database opens, or, if the other
 * thread holds the lock then, before its first operation.
 */
export class SqliteDatabase {
  private readonly db: DatabaseSync;
  private readonly schema: readonly string[];
  private ready: Promise<void> | undefined;
  private closed = false;

  constructor(path: string, schema: readonly string[]) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.db = new DatabaseSync(path);
    this.schema = schema;
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
    for (const stmt of this.schema) this.db.exec(stmt);
  }

  /** unlocked runs op, waiting off the thread while another connection holds the lock it needs. */
  async unlocked<T>(op: (db: DatabaseSync) => T): Promise<T> {
    const deadline = Date.now() + BUSY_DEADLINE_MS;
    this.ready ??= this.retryBusy(() => this.applySchema(), deadline).catch((e: unknown) => {
      this.ready = undefined;
      throw e;
    });
    await this.ready;
    return this.retryBusy(() => op(this.db), deadline);
  }

  /**
   * transaction runs op in one immediate transaction (the write lock taken at its start, so it
   * never fails midway for want of it), rolled back if op throws: one commit for many statements.
   */
  transaction<T>(op: (db: DatabaseSync) => T): Promise<T> {
    return this.unlocked((db) => {
      db.exec("BEGIN IMMEDIATE");
      try {
        const out = op(db);
        db.exec("COMMIT");
        return out;
      } catch (e) {
        if (db.isTransaction) db.exec("ROLLBACK");
        throw e;
      }
    });
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

  /** close closes the connection, once, however many stores share it. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}
