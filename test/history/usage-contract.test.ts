import { afterAll, describe, expect, it } from "vitest";
import { postgresUsage } from "../../hosts/node/postgres-usage.ts";
import { freePorts } from "../../infra/cluster/ports.ts";
import { HistoryUnavailable } from "../../lib/history/store.ts";
import type { UsageSample } from "../../lib/usage/sample.ts";
import { backends, freshEach } from "./backends.ts";
import { closeAfterEach, store } from "./postgres-support.ts";

// The usage store's contract, on the history's three real backends (SQLite, PostgreSQL, D1 in
// Miniflare): idempotent puts, ranges oldest first, series bounded by thinning that keeps their
// whole span, retention; and the same answers from all three.

const all = backends();
afterAll(() => Promise.all(all.map((b) => b.dispose())));
closeAfterEach();

const START = Date.parse("2026-11-21T10:00:00Z");

/** at is the i-th sampling moment, 10 s apart, RFC 3339 in whole seconds. */
const at = (i: number) => new Date(START + i * 10_000).toISOString().replace(".000Z", "Z");

/** sample is sandbox id's i-th sample, its figures telling samples apart. */
const sample = (sandboxId: string, i: number, over: Partial<UsageSample> = {}): UsageSample => ({
  sandboxId,
  at: at(i),
  cpuCount: 2,
  cpuUsedPct: 12.5 + i / 8,
  memUsed: 268_435_456 + i,
  memTotal: 68_719_476_736,
  memCache: 1024 * i,
  diskUsed: 1_048_576 + i,
  diskTotal: 10_737_418_240,
  ...over,
});

const ats = (samples: UsageSample[]) => samples.map((s) => s.at);
const seconds = (s: UsageSample) => (Date.parse(s.at) - START) / 1000;

describe.each(all)("the $name usage store", (backend) => {
  const fresh = freshEach(backend);

  it("round-trips samples, keeps the first of a (sandbox, at) and answers ranges oldest first", async () => {
    const usage = (await fresh()).openUsage();
    const a = Array.from({ length: 20 }, (_, i) => sample("sbx-a", i));
    const b = Array.from({ length: 5 }, (_, i) => sample("sbx-b", i));
    // Out of order, and interleaved with another sandbox's.
    await usage.put([...a.slice(10).reverse(), ...b, ...a.slice(0, 10)]);
    await usage.put([sample("sbx-a", 3, { cpuUsedPct: 99 }), sample("sbx-a", 4)]);
    await usage.put([]);
    expect(await usage.range("sbx-a", {})).toEqual(a);
    expect(await usage.range("sbx-b", {})).toEqual(b);
    expect(await usage.range("sbx-none", {})).toEqual([]);
    // from and to are inclusive; limit takes the oldest of the range.
    expect(ats(await usage.range("sbx-a", { from: at(5), to: at(8) }))).toEqual([5, 6, 7, 8].map(at));
    expect(ats(await usage.range("sbx-a", { from: at(17) }))).toEqual([17, 18, 19].map(at));
    expect(ats(await usage.range("sbx-a", { to: at(1) }))).toEqual([0, 1].map(at));
    expect(ats(await usage.range("sbx-a", { from: at(2), limit: 3 }))).toEqual([2, 3, 4].map(at));
    expect(await usage.range("sbx-a", { from: at(30) })).toEqual([]);
    // newest takes the newest of the range instead (the latest sample: one row), still oldest first.
    expect(await usage.range("sbx-a", { limit: 1, newest: true })).toEqual([a[19]]);
    expect(ats(await usage.range("sbx-a", { to: at(8), limit: 3, newest: true }))).toEqual([6, 7, 8].map(at));
    expect(await usage.range("sbx-none", { limit: 1, newest: true })).toEqual([]);
  });

  it("keeps and compares times in whole UTC seconds, whatever form they are given in", async () => {
    const usage = (await fresh()).openUsage();
    // 10:00:10 UTC, with an offset and milliseconds; then the same second again, with others.
    await usage.put([sample("sbx-a", 0, { at: "2026-11-21T12:00:10.250+02:00" })]);
    await usage.put([sample("sbx-a", 0, { at: "2026-11-21T10:00:10.900Z", cpuUsedPct: 99 })]);
    const stored = await usage.range("sbx-a", { to: "2026-11-21T10:00:10.000Z" });
    expect(stored).toEqual([sample("sbx-a", 0, { at: at(1) })]);
    expect(await usage.range("sbx-a", { from: "2026-11-21T10:00:10.001Z" })).toEqual([]);
    expect(await usage.range("sbx-a", { to: "2026-11-21T10:00:09.999Z" })).toEqual([]);
    expect(await usage.forget("2026-11-21T10:00:10.001Z")).toBe(1);
    await expect(usage.range("sbx-a", { from: "yesterday" })).rejects.toThrow(/^from: not an RFC 3339 time/);
    await expect(usage.put([sample("sbx-a", 0, { at: "soon" })])).rejects.toThrow(/samples\[0\]\.at/);
  });

  it("three hosts putting the same batches at once store each sample once", async () => {
    const database = await fresh();
    const hosts = [database.openUsage(8), database.openUsage(8), database.openUsage(8)];
    const batches = Array.from({ length: 8 }, (_, i) =>
      ["sbx-a", "sbx-b", "sbx-c"].map((id) => sample(id, i)),
    );
    await Promise.all(hosts.map(async (h) => Promise.all(batches.map((batch) => h.put(batch)))));
    for (const h of hosts)
      for (const id of ["sbx-a", "sbx-b", "sbx-c"])
        expect(ats(await h.range(id, {}))).toEqual(batches.map((_, i) => at(i)));
  });

  it("bounds a long series by thinning: first and last kept, its whole span evenly covered", async () => {
    const usage = (await fresh()).openUsage(8);
    const other = Array.from({ length: 6 }, (_, i) => sample("sbx-short", i));
    await usage.put(other);
    // One sample per put, as the sampler writes them, for 60 moments.
    for (let i = 0; i < 60; i++) await usage.put([sample("sbx-long", i)]);
    const kept = await usage.range("sbx-long", {});
    expect(kept.length).toBeLessThanOrEqual(8);
    expect(kept.length).toBeGreaterThanOrEqual(4);
    expect(kept[0]).toEqual(sample("sbx-long", 0));
    expect(kept.at(-1)).toEqual(sample("sbx-long", 59));
    expect(ats(kept)).toEqual([...ats(kept)].sort());
    // No stretch of the life is left without samples: no gap over a third of the span.
    const gaps = kept.slice(1).map((s, k) => seconds(s) - seconds(kept[k] as UsageSample));
    expect(Math.max(...gaps)).toBeLessThanOrEqual(590 / 3);
    // The newest samples stay at full resolution.
    expect(ats(kept.slice(-2))).toEqual([58, 59].map(at));
    // Another sandbox's series is untouched; a batch far over the cap is thinned at once.
    expect(await usage.range("sbx-short", {})).toEqual(other);
    await usage.put(Array.from({ length: 50 }, (_, i) => sample("sbx-batch", i)));
    const batch = await usage.range("sbx-batch", {});
    expect(batch.length).toBeLessThanOrEqual(8);
    expect([batch[0]?.at, batch.at(-1)?.at]).toEqual([at(0), at(49)]);
  });

  it("forgets the series whose newest sample is older than the bound, and only those", async () => {
    const usage = (await fresh()).openUsage();
    await usage.put([sample("sbx-old", 0), sample("sbx-old", 1), sample("sbx-new", 0)]);
    await usage.put([sample("sbx-new", 5)]);
    expect(await usage.forget(at(1))).toBe(0);
    expect(await usage.forget(at(3))).toBe(1);
    expect(await usage.range("sbx-old", {})).toEqual([]);
    expect(ats(await usage.range("sbx-new", {}))).toEqual([0, 5].map(at));
    expect(await usage.forget(at(3))).toBe(0);
    // A forgotten sandbox sampled again starts a new series, forgotten in turn.
    await usage.put([sample("sbx-old", 7)]);
    expect(ats(await usage.range("sbx-old", {}))).toEqual([at(7)]);
    expect(await usage.forget(at(8))).toBe(2);
    expect(await usage.range("sbx-new", {})).toEqual([]);
  });
});

describe("the three usage stores", () => {
  it("keep the same samples of the same puts, thinning included", async () => {
    const answers: UsageSample[][][] = [];
    for (const backend of all) {
      const db = await backend.fresh();
      try {
        const usage = db.openUsage(12);
        for (let i = 0; i < 61; i++) await usage.put([sample("sbx-a", i), sample("sbx-b", 3 * i)]);
        answers.push([await usage.range("sbx-a", {}), await usage.range("sbx-b", { from: at(30) })]);
      } finally {
        await db.close();
      }
    }
    const [sqlite, ...others] = answers;
    // Both series were thinned (61 and 41 samples), and not to nothing.
    expect(sqlite?.map((a) => a.length <= 12 && a.length > 6)).toEqual([true, true]);
    for (const other of others) expect(other).toEqual(sqlite);
  });
});

describe("the PostgreSQL usage store", () => {
  it("answers HistoryUnavailable, within its timeout, while nothing listens at its address", async () => {
    const [port] = await freePorts(1);
    const down = postgresUsage(store(`postgres://postgres:x@127.0.0.1:${port}/none`, { timeoutMs: 1000 }));
    const started = Date.now();
    await expect(down.put([sample("sbx-a", 0)])).rejects.toBeInstanceOf(HistoryUnavailable);
    await expect(down.range("sbx-a", {})).rejects.toBeInstanceOf(HistoryUnavailable);
    await expect(down.forget(at(0))).rejects.toBeInstanceOf(HistoryUnavailable);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
