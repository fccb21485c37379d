import type { LifecycleEvent } from "./lifecycle-event.ts";
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
 * HistoryStore keeps one terminal record per sandbox ID, and the lifecycle events (each pause and
 * each resume) of sandboxes before their end. put is idempotent: a second put of the same sandbox
 * ID changes nothing and reports "exists", so a step that crashed after writing the record and
 * runs again never duplicates it, and of several hosts putting the same record at once exactly
 * one is told "inserted". putEvent is idempotent the same way on (sandboxId, kind, n). Backends:
 * SQLite (the Node host's default), PostgreSQL (Node hosts sharing one database), D1 in the
 * Worker, all with the statements of lib/history/sql.ts and lifecycle-sql.ts. A store that cannot
 * reach its database throws HistoryUnavailable.
 */
export interface HistoryStore {
  put(record: SandboxRecord): Promise<"inserted" | "exists">;
  get(sandboxId: string): Promise<SandboxRecord | undefined>;
  query(q: HistoryQuery): Promise<HistoryPage>;
  /**
   * putEvent keeps the first event of each (sandboxId, kind, n): "exists" when one was already
   * there (left as it was). A malformed event is a RangeError naming its field, nothing written.
   */
  putEvent(e: LifecycleEvent): Promise<"inserted" | "exists">;
  /** events answers a sandbox's lifecycle events in the order they happened (n, then kind); none: []. */
  events(sandboxId: string): Promise<LifecycleEvent[]>;
}

/**
 * HistoryUnavailable says the history database cannot answer now (down, unreachable, overloaded,
 * or slower than the store's timeout): a retry later may succeed. Readers answer 503 with
 * Retry-After; a step whose record it could not write leaves its pod as it was (the stop
 * annotations stay) and the next run writes the record. Any other error is a fault, not a wait.
 */
export class HistoryUnavailable extends Error {
  /** RETRY_AFTER_SECONDS is what readers tell clients to wait (Retry-After) before they ask again. */
  static readonly RETRY_AFTER_SECONDS = 5;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "HistoryUnavailable";
  }
}
