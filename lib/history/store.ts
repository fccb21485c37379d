import type { SandboxRecord } from "./record.ts";

/** HistoryQuery filters terminal records; every field is optional and they are ANDed. */
export interface HistoryQuery {
  namespace?: string;
  pool?: string;
  team?: string;
  user?: string;
  /** terminatedAt in [from, to), RFC 3339. */
  from?: string;
  to?: string;
  /** At most this many records (default 100, at most 1000), newest first. */
  limit?: number;
  /** Opaque cursor from a previous page. */
  after?: string;
}

export interface HistoryPage {
  records: SandboxRecord[];
  /** Cursor for the next page; absent on the last one. */
  next?: string;
}

/**
 * HistoryStore keeps one terminal record per sandbox ID. put is idempotent: a second put of the
 * same sandbox ID changes nothing and reports "exists", so a step that crashed after writing
 * the record and runs again never duplicates it. Backends: SQLite in the Node host, D1 in the
 * Worker, both with the schema and queries of lib/history/sql.ts.
 */
export interface HistoryStore {
  put(record: SandboxRecord): Promise<"inserted" | "exists">;
  get(sandboxId: string): Promise<SandboxRecord | undefined>;
  query(q: HistoryQuery): Promise<HistoryPage>;
}
