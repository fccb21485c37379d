import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteHistoryStore } from "../../hosts/node/sqlite-history.ts";
import { SELECT_EVENTS } from "../../lib/history/lifecycle-sql.ts";
import { SCHEMA, selectQuery } from "../../lib/history/sql.ts";
import { PLANNED_FILTERS, record } from "../history/records.ts";

// What only the SQLite history backend has, on real SQLite databases: lock waits off the thread,
// the upgrade of its first schema, the query plans. The behaviour every backend shares is the
// contract of test/history/contract.test.ts (SQLite, PostgreSQL, D1).

const tempPath = () => join(mkdtempSync(join(tmpdir(), "history-")), "history.sqlite");

/**
 * whileHeld runs op while other holds its transaction, committed 300 ms later, and checks that op
 * waited off the thread: blocking on the lock would hold this thread, so the COMMIT could never run.
 */
async function whileHeld<T>(other: DatabaseSync, op: () => Promise<T>): Promise<T> {
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 10);
  const commit = setTimeout(() => other.exec("COMMIT"), 300);
  const started = Date.now();
  let result: T;
  try {
    result = await op();
  } finally {
    clearInterval(ticker);
    clearTimeout(commit);
    other.close();
  }
  expect(Date.now() - started).toBeLessThan(2000);
  expect(ticks).toBeGreaterThan(10);
  return result;
}

let store: SqliteHistoryStore | undefined;
afterEach(() => {
  store?.close();
  store = undefined;
});

describe("SqliteHistoryStore", () => {
  it("waits off the thread while another connection holds the write lock, then writes", async () => {
    const path = tempPath();
    store = new SqliteHistoryStore(path);
    // The other thread's connection (here: another connection in this one) holds the write lock.
    const other = new DatabaseSync(path);
    other.exec("BEGIN IMMEDIATE");
    const opened = store;
    expect(await whileHeld(other, () => opened.put(record(7)))).toBe("inserted");
    expect(await store.get(record(7).sandboxId)).toEqual(record(7));
  });

  it("answers a read while another connection holds the write lock its schema needs, waiting off the thread", async () => {
    // The Node host's two threads open one file: here the other thread's connection is creating
    // it (a write transaction) when this one opens it and serves /v1/history.
    const path = tempPath();
    const other = new DatabaseSync(path);
    other.exec("PRAGMA journal_mode = WAL; BEGIN IMMEDIATE; CREATE TABLE other_thread (x)");
    const page = await whileHeld(other, () => {
      store = new SqliteHistoryStore(path);
      return store.query({ namespace: "ns" });
    });
    expect(page).toEqual({ records: [] });
    expect(await store?.put(record(3))).toBe("inserted");
  });

  it("brings a database of the first schema up to date, keeping its records", async () => {
    const path = tempPath();
    const old = new DatabaseSync(path);
    old.exec(SCHEMA[0] ?? "");
    old.exec("CREATE INDEX sandbox_history_pool ON sandbox_history (namespace, pool, terminated_at DESC)");
    old.exec("CREATE INDEX sandbox_history_owner ON sandbox_history (team, user, terminated_at DESC)");
    old.close();
    const before = new SqliteHistoryStore(path);
    await before.put(record(1));
    before.close();
    store = new SqliteHistoryStore(path);
    expect((await store.query({ team: "a" })).records).toEqual([record(1)]);
    const check = new DatabaseSync(path);
    const indexes = check
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
      .all()
      .map((r) => r.name);
    check.close();
    expect(indexes).toEqual([
      "sandbox_history_namespace_time",
      "sandbox_history_owner_time",
      "sandbox_history_pool_time",
      "sandbox_history_team_time",
      "sandbox_history_time",
      "sandbox_history_user_time",
    ]);
  });
});

describe("the history queries' plans", () => {
  it("read every filter, with and without a cursor, from an index in keyset order: no table scan, no sort", async () => {
    store = new SqliteHistoryStore(":memory:");
    for (let i = 0; i < 3; i++) await store.put(record(i));
    const after = (await store.query({ limit: 1 })).next;
    expect(after).toBeDefined();
    const db = new DatabaseSync(":memory:");
    for (const stmt of SCHEMA) db.exec(stmt);
    const plans = PLANNED_FILTERS.flatMap((f) =>
      [f, { ...f, after }].map((q) => {
        const { sql, params } = selectQuery(q);
        const plan = db
          .prepare(`EXPLAIN QUERY PLAN ${sql}`)
          .all(...params)
          .map((r) => String(r.detail));
        return { q, plan };
      }),
    );
    db.close();
    for (const { q, plan } of plans) {
      // No filter and no cursor: the newest page is the time index's first entries.
      const pattern =
        Object.keys(q).length === 0
          ? /^SCAN sandbox_history USING INDEX sandbox_history_time$/
          : /^SEARCH sandbox_history USING INDEX sandbox_history_(\w+_)?time \(/;
      expect({ q, plan }).toEqual({ q, plan: [expect.stringMatching(pattern)] });
    }
  });

  it("read a sandbox's lifecycle events by their key: a seek, never a table scan", () => {
    const db = new DatabaseSync(":memory:");
    for (const stmt of SCHEMA) db.exec(stmt);
    const plan = db
      .prepare(`EXPLAIN QUERY PLAN ${SELECT_EVENTS}`)
      .all("sbx-a")
      .map((r) => String(r.detail));
    db.close();
    // The few rows found are sorted by time after the seek (no index is kept for that order).
    expect(plan).toEqual([
      "SEARCH sandbox_lifecycle USING PRIMARY KEY (sandbox_id=?)",
      "USE TEMP B-TREE FOR ORDER BY",
    ]);
  });
});
