import { SCHEMA } from "../../lib/history/sql.ts";
import { MAX_PARAMS, USAGE_SCHEMA } from "../../lib/usage/sql.ts";
import { type RunStatements, SqlUsageStore } from "../../lib/usage/sql-store.ts";
import { USAGE_SAMPLES_PER_SANDBOX } from "../../lib/usage/thin.ts";
import { SqliteDatabase } from "./sqlite-database.ts";
import { SqliteHistoryStore } from "./sqlite-history.ts";

/**
 * sqliteRun runs a usage store's statements in one transaction of the thread's SQLite connection:
 * one commit per put, however many statements its batch needs.
 */
export function sqliteRun(db: SqliteDatabase): RunStatements {
  return (statements) =>
    db.transaction((conn) =>
      // all() runs any statement: a write without RETURNING answers no rows.
      statements.map((s) => conn.prepare(s.sql).all(...s.params) as Record<string, unknown>[]),
    );
}

/** BOTH_SCHEMAS: the history's file holds the usage tables too. */
const BOTH_SCHEMAS = [...SCHEMA, ...USAGE_SCHEMA];

/** SqliteUsageStore is the Node host's usage store in its SQLite file (the history's, by default). */
export class SqliteUsageStore extends SqlUsageStore {
  private readonly db: SqliteDatabase;

  /** A path opens a connection of its own; a SqliteDatabase (openSqlite) is shared with the history. */
  constructor(source: string | SqliteDatabase, cap = USAGE_SAMPLES_PER_SANDBOX) {
    const db = typeof source === "string" ? new SqliteDatabase(source, BOTH_SCHEMAS) : source;
    super(sqliteRun(db), { cap, maxParams: MAX_PARAMS.sqlite });
    this.db = db;
  }

  close(): void {
    this.db.close();
  }
}

/** SqliteStores are one thread's history and usage stores on one connection to one file. */
export interface SqliteStores {
  history: SqliteHistoryStore;
  usage: SqliteUsageStore;
  close(): void;
}

/**
 * openSqlite opens a thread's SQLite file (":memory:": a throwaway one) with both schemas, and
 * the history and usage stores sharing its connection, so the samples live in the history's
 * file under the same busy handling and one close ends both.
 */
export function openSqlite(path: string, cap = USAGE_SAMPLES_PER_SANDBOX): SqliteStores {
  const db = new SqliteDatabase(path, BOTH_SCHEMAS);
  return {
    history: new SqliteHistoryStore(db),
    usage: new SqliteUsageStore(db, cap),
    close: () => db.close(),
  };
}
