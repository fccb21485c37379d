import type { HistoryStore } from "../../lib/history/store.ts";
import { HistoryUnavailable } from "../../lib/history/store.ts";
import type { UsageStore } from "../../lib/usage/store.ts";
import type { Log } from "../../lib/util/log.ts";
import { type PostgresHistorySettings, PostgresHistoryStore } from "./postgres-history.ts";
import { postgresUsage } from "./postgres-usage.ts";
import { openSqlite } from "./sqlite-usage.ts";

/** HistorySource says where a thread's history is: PostgreSQL when historyDatabase is set, else SQLite. */
export interface HistorySource {
  historyPath: string;
  historyDatabase?: PostgresHistorySettings;
}

/** OpenedHistory is a thread's store, the usage store in the same database, and how to close both. */
export interface OpenedHistory {
  store: HistoryStore;
  /** usage keeps the sandboxes' resource-use samples in the history's database. */
  usage: UsageStore;
  close(): Promise<void>;
}

/**
 * openHistory opens a thread's history store. PostgreSQL's schema is migrated here, at start: a
 * fault (a wrong password, a missing database, a schema this host does not know) fails the start
 * loudly; a database that is down does not (the host serves creates meanwhile, and the store
 * migrates before its first operation once the database is back).
 */
export async function openHistory(source: HistorySource, log: Log): Promise<OpenedHistory> {
  if (!source.historyDatabase) {
    const sqlite = openSqlite(source.historyPath);
    return { store: sqlite.history, usage: sqlite.usage, close: async () => sqlite.close() };
  }
  const store = new PostgresHistoryStore(source.historyDatabase, log);
  try {
    const m = await store.migrate();
    log.info(
      { from: m.from, to: m.to, applied: m.applied, ahead: m.ahead },
      m.ahead ? "history database is ahead of this host's schema" : "history database schema ready",
    );
  } catch (e) {
    if (!(e instanceof HistoryUnavailable)) {
      await store.close();
      throw e;
    }
    log.warn({ err: e.message }, "history database unavailable at start; migrating when it is back");
  }
  return { store, usage: postgresUsage(store), close: () => store.close() };
}
