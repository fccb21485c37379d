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
import { SqliteDatabase } from "./sqlite-database.ts";

/**
 * SqliteHistoryStore is the Node host's history backend: an embedded SQLite file, through a
 * SqliteDatabase (WAL, the busy handling between the host's two threads). Given a path it opens
 * a connection of its own, with the history's schema; given a SqliteDatabase (openSqlite) it
 * shares that connection with the usage store kept in the same file.
 */
export class SqliteHistoryStore implements HistoryStore {
  private readonly db: SqliteDatabase;

  constructor(source: string | SqliteDatabase) {
    this.db = typeof source === "string" ? new SqliteDatabase(source, SCHEMA) : source;
  }

  async put(record: SandboxRecord): Promise<"inserted" | "exists"> {
    const res = await this.db.unlocked((db) => db.prepare(INSERT).run(...insertParams(record)));
    return Number(res.changes) === 1 ? "inserted" : "exists";
  }

  async get(sandboxId: string): Promise<SandboxRecord | undefined> {
    const row = await this.db.unlocked((db) => db.prepare(SELECT_ONE).get(sandboxId) as Row | undefined);
    return row ? fromRow(row) : undefined;
  }

  async query(q: HistoryQuery): Promise<HistoryPage> {
    const { sql, params, limit } = selectQuery(q);
    return page(await this.db.unlocked((db) => db.prepare(sql).all(...params) as Row[]), limit);
  }

  close(): void {
    this.db.close();
  }
}
