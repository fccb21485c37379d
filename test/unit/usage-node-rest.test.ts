import { describe, expect, it } from "vitest";
import { isResting, MAX_REST_MS, type NodeRest, nextRest } from "../../lib/usage/node-rest.ts";

// The sampler's per-node backoff, as plain numbers: a failing node rests one period, then twice
// as long with each failure in a row, at most MAX_REST_MS.
describe("nextRest", () => {
  it("doubles a failing node's rest from one period up to MAX_REST_MS", () => {
    const period = 10_000;
    let rest: NodeRest | undefined;
    const rests: number[] = [];
    for (let i = 0; i < 6; i++) {
      const now = 1_000_000 + i * 100_000;
      rest = nextRest(rest, now, period);
      rests.push(rest.untilMs - now);
    }
    expect(rests).toEqual([10_000, 20_000, 40_000, MAX_REST_MS, MAX_REST_MS, MAX_REST_MS]);
    expect(rest?.failures).toBe(6);
  });

  it("skips a node until its rest is over, and a node that never failed never", () => {
    const rest = nextRest(undefined, 0, 10_000);
    expect(isResting(rest, 0)).toBe(true);
    expect(isResting(rest, 9_999)).toBe(true);
    expect(isResting(rest, 10_000)).toBe(false);
    expect(isResting(undefined, 0)).toBe(false);
  });

  it("rests a node no longer than the cap however long the period, and never overflows", () => {
    expect(nextRest(undefined, 0, 3_600_000).untilMs).toBe(MAX_REST_MS);
    expect(nextRest({ failures: 5000, untilMs: 0 }, 0, 10_000).untilMs).toBe(MAX_REST_MS);
  });
});
