import { afterAll, describe, expect, it } from "vitest";
import type { SandboxRecord } from "../../lib/history/record.ts";
import type { HistoryPage, HistoryQuery, HistoryStore } from "../../lib/history/store.ts";
import { backends, freshEach } from "./backends.ts";
import { record } from "./records.ts";

// One contract, three real backends: SQLite (the Node host's default), PostgreSQL (Node hosts
// sharing a database; this run's server, each test a database of its own with an ICU default
// collation) and D1 (Miniflare's, migrated as a deployment's is). Same records, same pages.

const all = backends();
afterAll(() => Promise.all(all.map((b) => b.dispose())));

/** pages reads every page of q (limit per page) and answers them in order. */
async function pages(store: HistoryStore, q: HistoryQuery): Promise<HistoryPage[]> {
  const out: HistoryPage[] = [];
  let after: string | undefined;
  do {
    const page = await store.query({ ...q, ...(after ? { after } : {}) });
    out.push(page);
    after = page.next;
  } while (after);
  return out;
}

const ids = (ps: HistoryPage[]) => ps.flatMap((p) => p.records.map((r) => r.sandboxId));

/** newestFirst is the keyset order, bytewise: terminatedAt, then sandboxId, both descending. */
const newestFirst = (a: SandboxRecord, b: SandboxRecord) =>
  a.terminatedAt !== b.terminatedAt
    ? a.terminatedAt < b.terminatedAt
      ? 1
      : -1
    : a.sandboxId < b.sandboxId
      ? 1
      : -1;

/** ODD_IDS sort differently bytewise than in a language's collation (case, punctuation, accents). */
const ODD_IDS = [
  "sbx-B",
  "sbx-a",
  "sbx_a",
  "SBX-a",
  "sbx-a-1",
  "sbx-Äa",
  "sbx-b",
  "sbx.a",
  "sbx-10",
  "sbx-9",
];

describe.each(all)("the $name history store", (backend) => {
  const fresh = freshEach(backend);

  it("round-trips a record, its optional fields set or absent, and keeps the first write", async () => {
    const store = (await fresh()).open();
    const full = record(1, {
      failureReason: "OOMKilled",
      failureMessage: "the container used 2Gi",
      exitCode: 137,
      stopReason: "Failed",
      containerId: "containerd://x",
      startedAt: "2026-11-21T10:00:05Z",
      cpuMillis: 1500.5,
      memoryBytes: 68_719_476_736,
    });
    const bare: SandboxRecord = {
      sandboxId: "sbx-bare",
      namespace: "ns",
      poolName: "p",
      podName: "p-0",
      terminatedAt: "2026-11-21T11:00:00Z",
      containerImages: {},
      metadata: {},
      cpuMillis: 0,
      memoryBytes: 0,
      stopReason: "Released",
    };
    expect(await store.put(full)).toBe("inserted");
    expect(await store.put({ ...full, stopReason: "Released" })).toBe("exists");
    expect(await store.put(bare)).toBe("inserted");
    expect(await store.get(full.sandboxId)).toEqual(full);
    expect(await store.get(bare.sandboxId)).toEqual(bare);
    expect(await store.get("nope")).toBeUndefined();
  });

  it("filters by namespace, pool, team, user and time range, newest first", async () => {
    const store = (await fresh()).open();
    for (let i = 0; i < 30; i++) await store.put(record(i));
    await store.put(record(30, { namespace: "other", user: "user" }));
    const odd = await store.query({ pool: "odd" });
    expect(odd.records.map((r) => r.sandboxId)).toEqual(
      Array.from({ length: 15 }, (_, k) => record(29 - 2 * k).sandboxId),
    );
    const owner = await store.query({ team: "b", user: "u0" });
    expect(owner.records.map((r) => r.sandboxId)).toEqual(["sbx-024", "sbx-012", "sbx-000"]);
    // "user" is a keyword in PostgreSQL: the filter must name the column, not CURRENT_USER.
    expect((await store.query({ user: "user" })).records.map((r) => r.sandboxId)).toEqual(["sbx-030"]);
    expect((await store.query({ user: "u1" })).records).toHaveLength(8);
    const range = await store.query({ from: "2026-11-21T10:10:00Z", to: "2026-11-21T10:12:00Z" });
    expect(range.records.map((r) => r.sandboxId)).toEqual(["sbx-011", "sbx-010"]);
    expect((await store.query({ namespace: "other" })).records.map((r) => r.sandboxId)).toEqual(["sbx-030"]);
    expect((await store.query({ namespace: "none" })).records).toEqual([]);
  });

  it("pages with a cursor without gaps or repeats, ties broken by sandbox ID; a foreign cursor is refused", async () => {
    const store = (await fresh()).open();
    for (let i = 0; i < 25; i++) await store.put(record(i, { terminatedAt: "2026-11-21T11:00:00Z" }));
    const read = await pages(store, { limit: 10 });
    expect(read.map((p) => p.records.length)).toEqual([10, 10, 5]);
    expect(ids(read)).toEqual(Array.from({ length: 25 }, (_, k) => record(24 - k).sandboxId));
    await expect(store.query({ after: "garbage" })).rejects.toThrow(RangeError);
  });

  it("orders sandbox IDs and times bytewise, whatever the database's collation", async () => {
    const store = (await fresh()).open();
    const times = ["2026-11-21T10:00:00Z", "2026-11-21T10:00:00.5Z", "2026-11-21T10:00:00Z"];
    const records = ODD_IDS.map((sandboxId, i) =>
      record(i, { sandboxId, terminatedAt: times[i % times.length] ?? "" }),
    );
    for (const r of records) await store.put(r);
    const expected = [...records].sort(newestFirst).map((r) => r.sandboxId);
    expect(ids(await pages(store, { limit: 3 }))).toEqual(expected);
    expect(
      ids(await pages(store, { limit: 2, from: "2026-11-21T10:00:00Z", to: "2026-11-21T10:00:00Z~" })),
    ).toEqual(expected.filter((id) => records.find((r) => r.sandboxId === id)?.terminatedAt === times[0]));
  });

  it("three hosts racing on the same 200 records: each stored once, each answered inserted once", async () => {
    const database = await fresh();
    const hosts = [database.open(), database.open(), database.open()];
    const records = Array.from({ length: 200 }, (_, i) => record(i));
    const answers = await Promise.all(hosts.map((h) => Promise.all(records.map((r) => h.put(r)))));
    const inserted = records.map((_, i) => answers.filter((a) => a[i] === "inserted").length);
    expect(inserted).toEqual(records.map(() => 1));
    for (const h of hosts) {
      const stored = ids(await pages(h, { limit: 1000 }));
      expect(stored).toEqual([...records].sort(newestFirst).map((r) => r.sandboxId));
    }
  });
});

describe("the three backends", () => {
  it("answer the same pages, cursors included, for the same records and queries", async () => {
    const records = [
      ...Array.from({ length: 90 }, (_, i) => record(i)),
      ...ODD_IDS.map((sandboxId, i) => record(i, { sandboxId, team: "odd" })),
    ];
    const queries: HistoryQuery[] = [
      { limit: 7 },
      { pool: "odd", limit: 5 },
      { team: "a", user: "u1", limit: 4 },
      { team: "odd", limit: 3 },
      { namespace: "ns", from: "2026-11-21T10:20:00Z", to: "2026-11-21T10:40:00Z", limit: 6 },
      { user: "u2", from: "2026-11-21T10:30:00Z" },
    ];
    const answers: HistoryPage[][][] = [];
    for (const backend of all) {
      const db = await backend.fresh();
      try {
        const store = db.open();
        for (const r of records) await store.put(r);
        answers.push(await Promise.all(queries.map((q) => pages(store, q))));
      } finally {
        await db.close();
      }
    }
    const [sqlite, ...others] = answers;
    expect(sqlite?.map((ps) => ids(ps).length)).toEqual([100, 50, 16, 10, 30, 8]);
    for (const other of others) expect(other).toEqual(sqlite);
  });
});
