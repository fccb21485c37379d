import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteHistoryStore } from "../../hosts/node/sqlite-history.ts";
import type { SandboxRecord } from "../../lib/history/record.ts";

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

let store: SqliteHistoryStore;
afterEach(() => store?.close());

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
    const path = join(mkdtempSync(join(tmpdir(), "history-")), "history.sqlite");
    store = new SqliteHistoryStore(path);
    // The other thread's connection (here: another connection in this one) holds the write lock.
    const other = new DatabaseSync(path);
    other.exec("BEGIN IMMEDIATE");
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 10);
    setTimeout(() => other.exec("COMMIT"), 300);
    const started = Date.now();
    try {
      // Blocking on the lock would hold this thread, so the COMMIT above could never run.
      expect(await store.put(record(7))).toBe("inserted");
    } finally {
      clearInterval(ticker);
      other.close();
    }
    expect(Date.now() - started).toBeLessThan(2000);
    expect(ticks).toBeGreaterThan(10);
    expect(await store.get(record(7).sandboxId)).toEqual(record(7));
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
