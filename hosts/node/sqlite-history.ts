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

/**
 * SqliteHistoryStore is the Node host's history backend: an embedded SQLite file (Node's
 * node:sqlite), WAL mode so readers never block the writer. ":memory:" gives a throwaway store.
 */
export class SqliteHistoryStore implements HistoryStore {
  private readonly db: DatabaseSync;

  constructor(path: string) {
    if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
    this.db = new DatabaseSync(path);
    this.db.exec("PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 5000;");
    for (const stmt of SCHEMA) this.db.exec(stmt);
  }

  async put(record: SandboxRecord): Promise<"inserted" | "exists"> {
    const res = this.db.prepare(INSERT).run(...insertParams(record));
    return Number(res.changes) === 1 ? "inserted" : "exists";
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
