import { describe, expect, it } from "vitest";
import { usageForgetBefore } from "../../lib/usage/retention.ts";
import { thinSeries, USAGE_SAMPLES_PER_SANDBOX } from "../../lib/usage/thin.ts";

// Which samples a series over its cap drops: plain times in, the dropped ones out.

const START = Date.parse("2026-11-21T10:00:00Z");
const at = (s: number) => new Date(START + s * 1000).toISOString().replace(".000Z", "Z");
/** series is n samples, `every` seconds apart. */
const series = (n: number, every = 10) => Array.from({ length: n }, (_, i) => at(i * every));
const keep = (ats: string[], cap: number) => {
  const drop = new Set(thinSeries(ats, cap));
  return ats.filter((a) => !drop.has(a));
};
const secs = (a: string) => (Date.parse(a) - START) / 1000;

describe("thinSeries", () => {
  it("drops nothing at or under the cap", () => {
    expect(thinSeries([], 8)).toEqual([]);
    expect(thinSeries(series(8), 8)).toEqual([]);
  });

  it("keeps the first and the last, the newest quarter of the cap whole, the older half of it evenly spaced", () => {
    const ats = series(9);
    // 9 > 8: the 2 newest stay; of the 7 older (0..60 s), 4 stay, at least 20 s apart.
    expect(keep(ats, 8).map(secs)).toEqual([0, 20, 40, 60, 70, 80]);
    expect(thinSeries(ats, 8).map(secs)).toEqual([10, 30, 50]);
  });

  it("leaves at most 3/4 of the cap, so the next thinning is a quarter of the cap of samples away", () => {
    for (const n of [1441, 2000, 5000]) {
      const kept = keep(series(n), USAGE_SAMPLES_PER_SANDBOX);
      expect(kept.length).toBeLessThanOrEqual(1080);
      expect(kept.length).toBeGreaterThan(1000);
      expect([kept[0], kept.at(-1)]).toEqual([at(0), at((n - 1) * 10)]);
      expect(kept.slice(-360)).toEqual(series(n).slice(-360));
    }
  });

  it("keeps a long life evenly covered however many times it is thinned", () => {
    // A sandbox sampled every 10 s for 10 days, thinned whenever it passes the cap, as the store does.
    const cap = USAGE_SAMPLES_PER_SANDBOX;
    let stored: string[] = [];
    let thinnings = 0;
    for (let i = 0; i < 86_400; i++) {
      stored.push(at(i * 10));
      if (stored.length > cap) {
        const drop = new Set(thinSeries(stored, cap));
        stored = stored.filter((a) => !drop.has(a));
        thinnings++;
      }
    }
    expect(thinnings).toBeGreaterThan(100);
    expect(stored.length).toBeLessThanOrEqual(cap);
    expect([stored[0], stored.at(-1)]).toEqual([at(0), at(863_990)]);
    // The older part's gaps are within a small factor of its even spacing (span / (cap / 2)).
    const older = stored.slice(0, -360).map(secs);
    const gaps = older.slice(1).map((t, k) => t - (older[k] ?? 0));
    const even = (older.at(-1) ?? 0) / (cap / 2);
    expect(Math.max(...gaps)).toBeLessThan(3 * even);
    // The last hour is at full resolution.
    expect(stored.slice(-360)).toEqual(Array.from({ length: 360 }, (_, k) => at((86_040 + k) * 10)));
  });

  it("copes with irregular times and refuses a cap it cannot keep", () => {
    const irregular = [0, 1, 2, 3, 100, 101, 102, 500, 501, 900].map(at);
    const kept = keep(irregular, 4);
    expect(kept.length).toBeLessThanOrEqual(3);
    expect([kept[0], kept.at(-1)]).toEqual([at(0), at(900)]);
    expect(() => thinSeries([], 3)).toThrow(RangeError);
    expect(() => thinSeries([], 4.5)).toThrow(RangeError);
  });
});

describe("usageForgetBefore", () => {
  it("is a day before now, in whole seconds as the samples' times are written", () => {
    expect(usageForgetBefore(new Date("2026-11-21T10:00:00.750Z"))).toBe("2026-11-20T10:00:00Z");
    expect(usageForgetBefore(new Date("2026-11-21T10:00:00Z"), 10_000)).toBe("2026-11-21T09:59:50Z");
    // Compared as text with the samples' times: a sample a second too old sorts before it.
    expect("2026-11-20T09:59:59Z" < usageForgetBefore(new Date("2026-11-21T10:00:00Z"))).toBe(true);
  });
});
