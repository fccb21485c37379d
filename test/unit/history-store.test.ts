import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteHistoryStore } from "../../hosts/node/sqlite-history.ts";
import type { SandboxRecord } from "../../lib/history/record.ts";
import { SCHEMA, selectQuery } from "../../lib/history/sql.ts";
import type { HistoryQuery } from "../../lib/history/store.ts";

// The Node history backend on a real (in-memory) SQLite database, with the shared SQL.

const record = (i: number, over: Partial<SandboxRecord> = {}): SandboxRecord => ({
  sandboxId: `sbx-${String(i).padStart(3, "0")}`,
  namespace: "ns",
  poolName: i % 2 ? "odd" : "even",
  podName: `pool-${i}`,
  team: i % 3 ? "a" : "b",
  user: `u${i % 4}`,
  claimedAt: "2026-11-21T10:00:00Z",
  terminatedAt: `2026-11-21T10:${String(i % 60).padStart(2, "0")}:00Z`,
  containerImages: { main: `img:${i}` },
  metadata: { run: String(i) },
  cpuMillis: 500,
  memoryBytes: 1024,
  stopReason: "Completed",
  ...over,
});

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
  it("round-trips a record and keeps the first write for a sandbox ID", async () => {
    store = new SqliteHistoryStore(":memory:");
    const r = record(1, {
      failureReason: "OOMKilled",
      exitCode: 137,
      stopReason: "Failed",
      containerId: "containerd://x",
    });
    expect(await store.put(r)).toBe("inserted");
    expect(await store.put({ ...r, stopReason: "Released" })).toBe("exists");
    expect(await store.get(r.sandboxId)).toEqual(r);
    expect(await store.get("nope")).toBeUndefined();
  });

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

  it("filters by namespace, pool, team, user and time range, newest first", async () => {
    store = new SqliteHistoryStore(":memory:");
    for (let i = 0; i < 30; i++) await store.put(record(i));
    const odd = await store.query({ pool: "odd" });
    expect(odd.records).toHaveLength(15);
    expect(odd.records.every((r) => r.poolName === "odd")).toBe(true);
    expect(odd.records.map((r) => r.terminatedAt)).toEqual(
      [...odd.records.map((r) => r.terminatedAt)].sort().reverse(),
    );
    const owner = await store.query({ team: "b", user: "u0" });
    expect(owner.records.map((r) => r.sandboxId).sort()).toEqual(["sbx-000", "sbx-012", "sbx-024"]);
    const range = await store.query({ from: "2026-11-21T10:10:00Z", to: "2026-11-21T10:12:00Z" });
    expect(range.records.map((r) => r.sandboxId)).toEqual(["sbx-011", "sbx-010"]);
    expect((await store.query({ namespace: "other" })).records).toEqual([]);
  });

  it("pages with a cursor without gaps or repeats", async () => {
    store = new SqliteHistoryStore(":memory:");
    // Equal timestamps: the cursor must break ties by sandbox ID.
    for (let i = 0; i < 25; i++) await store.put(record(i, { terminatedAt: "2026-11-21T11:00:00Z" }));
    const seen: string[] = [];
    let after: string | undefined;
    do {
      const page = await store.query({ limit: 10, ...(after ? { after } : {}) });
      seen.push(...page.records.map((r) => r.sandboxId));
      after = page.next;
    } while (after);
    expect(seen).toHaveLength(25);
    expect(new Set(seen).size).toBe(25);
    await expect(store.query({ after: "garbage" })).rejects.toThrow(/after/);
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
    const range = { from: "2026-11-21T10:00:00Z", to: "2026-11-21T11:00:00Z" };
    const filters: HistoryQuery[] = [
      {},
      range,
      { namespace: "ns" },
      { pool: "odd" },
      { namespace: "ns", pool: "odd" },
      { team: "a" },
      { user: "u1" },
      // A tenant's queries: its team and user always, its other filters on top.
      { team: "a", user: "u1" },
      { team: "a", user: "u1", namespace: "ns", pool: "odd" },
      { team: "a", user: "u1", ...range },
      { namespace: "ns", ...range },
    ];
    const plans = filters.flatMap((f) =>
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
});
