import { describe, expect, it } from "vitest";
import { forgetDue, USAGE_FORGET_EVERY_MS, usageForgetBefore } from "../../lib/usage/retention.ts";

describe("usage retention", () => {
  it("forgets with the one sample whose period holds the hour's boundary", () => {
    const hour = Date.parse("2026-12-02T07:00:00Z");
    const period = 10_000;
    const due = (ms: number) => forgetDue(new Date(ms), period);
    expect(due(hour)).toBe(true);
    expect(due(hour + 9_999)).toBe(true);
    expect(due(hour + 10_000)).toBe(false);
    expect(due(hour - 1)).toBe(false);
    // Over a whole hour of samples every 10 s, exactly one forgets, whatever the phase.
    for (const phase of [0, 3_333, 9_999]) {
      let count = 0;
      for (let t = hour + phase; t < hour + phase + USAGE_FORGET_EVERY_MS; t += period) if (due(t)) count++;
      expect(count).toBe(1);
    }
  });

  it("forgets what is older than a day, in whole seconds", () => {
    expect(usageForgetBefore(new Date("2026-12-02T07:00:00.750Z"))).toBe("2026-12-01T07:00:00Z");
  });
});
