import { describe, expect, it } from "vitest";
import { fullBudget, MISS_RATE, type MissBudget, spendMiss } from "../../lib/data-plane/miss-budget.ts";

/** spendAll spends misses at `at` until one is refused, and says how many were allowed. */
function spendAll(budget: MissBudget, at: number): { allowed: number; budget: MissBudget } {
  let b = budget;
  let allowed = 0;
  for (let i = 0; i < 1000; i++) {
    const r = spendMiss(b, at);
    b = r.budget;
    if (!r.ok) break;
    allowed++;
  }
  return { allowed, budget: b };
}

describe("spendMiss", () => {
  it("allows a burst, then misses at the refill rate, whatever is asked", () => {
    expect(MISS_RATE).toEqual({ perSecond: 5, burst: 10 });
    const burst = spendAll(fullBudget(0), 0);
    expect(burst.allowed).toBe(10);
    // 200 ms refill one read; a second refills five.
    expect(spendAll(burst.budget, 200).allowed).toBe(1);
    expect(spendAll(burst.budget, 1_000).allowed).toBe(5);
    // Idle for an hour: never more than the burst.
    expect(spendAll(burst.budget, 3_600_000).allowed).toBe(10);
  });

  it("over ten seconds of asking without pause allows at most burst + rate x seconds", () => {
    let b = fullBudget(0);
    let allowed = 0;
    for (let t = 0; t <= 10_000; t += 7) {
      const r = spendMiss(b, t);
      b = r.budget;
      if (r.ok) allowed++;
    }
    expect(allowed).toBeLessThanOrEqual(10 + 5 * 10);
    expect(allowed).toBeGreaterThanOrEqual(10 + 5 * 10 - 1);
  });

  it("refills nothing when the clock goes back", () => {
    const spent = spendAll(fullBudget(5_000), 5_000);
    expect(spendAll(spent.budget, 1_000).allowed).toBe(0);
    expect(spendMiss(spent.budget, 1_000).budget.at).toBe(5_000);
  });
});
