import { describe, expect, it } from "vitest";
import { toPostgres } from "../../lib/history/postgres-sql.ts";
import type { UsageSample } from "../../lib/usage/sample.ts";
import {
  countSeries,
  dropSamples,
  forgetSeries,
  fromUsageRow,
  insertSamples,
  MAX_PARAMS,
  overCap,
  selectRange,
  touchSeries,
} from "../../lib/usage/sql.ts";

// The usage store's statements as plain data: within D1's parameter limit, in key order, counted right.

const sample = (sandboxId: string, i: number): UsageSample => ({
  sandboxId,
  at: `2026-11-21T10:${String(i).padStart(2, "0")}:00Z`,
  cpuCount: 2,
  cpuUsedPct: 1.5,
  memUsed: 1,
  memTotal: 2,
  memCache: 0,
  diskUsed: 3,
  diskTotal: 4,
});

describe("the usage statements", () => {
  it("insert a batch in multi-row statements within D1's parameter limit, in key order", () => {
    const batch = [...Array.from({ length: 30 }, (_, i) => sample("sbx-b", i)), sample("sbx-a", 59)];
    const statements = insertSamples(batch, MAX_PARAMS.d1);
    expect(statements.map((s) => s.params.length)).toEqual([99, 99, 81]);
    expect(insertSamples(batch, MAX_PARAMS.sqlite).map((s) => s.params.length)).toEqual([279]);
    for (const s of statements) {
      expect(s.params.length).toBeLessThanOrEqual(MAX_PARAMS.d1);
      expect(s.sql.match(/\?/g)).toHaveLength(s.params.length);
      expect(s.sql).toMatch(/ON CONFLICT \(sandbox_id, at\) DO NOTHING RETURNING sandbox_id, at$/);
    }
    // Key order: the later sandbox ID's samples after the earlier's, whatever the batch's order.
    expect(statements[0]?.params.slice(0, 2)).toEqual(["sbx-a", sample("sbx-a", 59).at]);
    expect(toPostgres(statements[2]?.sql ?? "")).toContain("$81)");
    const row = Object.fromEntries(
      [
        "sandbox_id",
        "at",
        "cpu_count",
        "cpu_used_pct",
        "mem_used",
        "mem_total",
        "mem_cache",
        "disk_used",
        "disk_total",
      ].map((k, i) => [k, statements[0]?.params[i] ?? null]),
    );
    expect(fromUsageRow(row)).toEqual(sample("sbx-a", 59));
  });

  it("count only what was inserted into each series, its newest time the latest; touching counts none", () => {
    const [count] = countSeries(
      [
        { sandbox_id: "sbx-b", at: "2026-11-21T10:02:00Z" },
        { sandbox_id: "sbx-a", at: "2026-11-21T10:05:00Z" },
        { sandbox_id: "sbx-b", at: "2026-11-21T10:01:00Z" },
      ],
      MAX_PARAMS.d1,
    );
    expect(count?.params).toEqual(["sbx-a", 1, "2026-11-21T10:05:00Z", "sbx-b", 2, "2026-11-21T10:02:00Z"]);
    const [touch] = touchSeries([sample("sbx-a", 3), sample("sbx-a", 7)], MAX_PARAMS.d1);
    expect(touch?.params).toEqual(["sbx-a", 0, sample("sbx-a", 7).at]);
    const counts = [
      { sandbox_id: "sbx-a", samples: 8 },
      { sandbox_id: "sbx-b", samples: 9 },
      { sandbox_id: "sbx-c", samples: 11 },
      { sandbox_id: "sbx-d", samples: 10 },
    ];
    expect(overCap(counts, 8, 5)).toEqual(["sbx-c", "sbx-d", "sbx-b"]);
    // At most `most`, the fullest first: the others are thinned at a later put.
    expect(overCap(counts, 8, 2)).toEqual(["sbx-c", "sbx-d"]);
  });

  it("drop, forget and read within the limit: a count recounted, a range's limit within 1 and the cap", () => {
    const ats = Array.from({ length: 250 }, (_, i) => `t${i}`);
    const drops = dropSamples("sbx-a", ats, MAX_PARAMS.d1);
    expect(drops.map((s) => s.params.length)).toEqual([100, 100, 53, 2]);
    expect(drops.at(-1)?.sql).toMatch(/^UPDATE sandbox_usage_series SET samples = \(SELECT count\(\*\)/);
    const forgets = forgetSeries(ats, "t", 64);
    expect(forgets.map((pair) => pair.map((s) => s.params.length))).toEqual([
      [65, 65],
      [65, 65],
      [65, 65],
      [59, 59],
    ]);
    // The samples first, then the rows still old: a forget stopped midway leaves rows, not orphans.
    expect(forgets[0]?.map((s) => s.sql.slice(0, 38))).toEqual([
      "DELETE FROM sandbox_usage WHERE at < ?",
      "DELETE FROM sandbox_usage_series WHERE",
    ]);
    expect(forgets[0]?.[1]?.sql).toMatch(/last_at < \? AND sandbox_id IN \(.*\) RETURNING sandbox_id$/);
    expect(selectRange("sbx-a", {}, 1440).sql).toMatch(/WHERE sandbox_id = \? ORDER BY at LIMIT 1440$/);
    expect(selectRange("sbx-a", { limit: 0 }, 1440).sql).toMatch(/LIMIT 1$/);
    expect(selectRange("sbx-a", { limit: 5000 }, 1440).sql).toMatch(/LIMIT 1440$/);
    // The latest sample: the newest one, read backwards (one step of the primary key).
    expect(selectRange("sbx-a", { limit: 1, newest: true }, 1440).sql).toMatch(/ORDER BY at DESC LIMIT 1$/);
    expect(selectRange("sbx-a", { newest: false }, 1440).sql).toMatch(/ORDER BY at LIMIT 1440$/);
    const ranged = selectRange("sbx-a", { from: "f", to: "t", limit: 10 }, 1440);
    expect(ranged.sql).toContain("sandbox_id = ? AND at >= ? AND at <= ?");
    expect(ranged.params).toEqual(["sbx-a", "f", "t"]);
  });
});
