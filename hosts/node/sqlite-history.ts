import type { LifecycleEvent } from "../../lib/history/lifecycle-event.ts";
import { eventFromRow, eventParams, INSERT_EVENT, SELECT_EVENTS } from "../../lib/history/lifecycle-sql.ts";
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
 * a connection of its own, with the history's schema (records and lifecycle events); given a
 * SqliteDatabase (openSqlite) it shares that connection with the usage store kept in the same file.
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

  async putEvent(e: LifecycleEvent): Promise<"inserted" | "exists"> {
    const params = eventParams(e);
    const res = await this.db.unlocked((db) => db.prepare(INSERT_EVENT).run(...params));
    return Number(res.changes) === 1 ? "inserted" : "exists";
  }

  async events(sandboxId: string): Promise<LifecycleEvent[]> {
    const rows = await this.db.unlocked((db) => db.prepare(SELECT_EVENTS).all(sandboxId) as Row[]);
    return rows.map(eventFromRow);
  }

  close(): void {
    this.db.close();
  }
}
