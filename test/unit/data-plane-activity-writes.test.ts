import { describe, expect, it } from "vitest";
import { planActivityWrites, type RoutedSandbox } from "../../lib/data-plane/activity-writes.ts";
import { activityThrottleSeconds } from "../../lib/lifecycle/activity-throttle.ts";

// When the router persists a sandbox's traffic as its last-active annotation: only routed
// sandboxes, only once the traffic moved past what is stored (or what this host wrote last) by a
// throttle that is a fifth of the sandbox's idle timeout, at most 30 s.

const routed = (over: Partial<RoutedSandbox> = {}): RoutedSandbox => ({
  sandboxId: "sbx-a",
  namespace: "ns",
  podName: "p-0",
  ...over,
});
const at = (s: string) => new Date(`2026-01-01T00:00:${s}Z`);

describe("activityThrottleSeconds", () => {
  it("is a fifth of the idle timeout, between 1 s and the push path's 30 s", () => {
    expect(activityThrottleSeconds(5)).toBe(1);
    expect(activityThrottleSeconds(2)).toBe(1);
    expect(activityThrottleSeconds(60)).toBe(12);
    expect(activityThrottleSeconds(600)).toBe(30);
    expect(activityThrottleSeconds(undefined)).toBe(30);
    expect(activityThrottleSeconds(0)).toBe(30);
  });
});

describe("planActivityWrites", () => {
  it("writes a routed sandbox's traffic once it moved on by the throttle", () => {
    const seen = new Map([["sbx-a", at("10")]]);
    const stored = "2026-01-01T00:00:08Z";
    // Idle timeout 5 s: a 1 s throttle, so 2 s later is worth a write; 600 s: 30 s, so it is not.
    expect(
      planActivityWrites([routed({ lastActive: stored, idleTimeoutSeconds: 5 })], seen, new Map()),
    ).toEqual([
      // It tests the time it replaces: a slower host never moves a later one back.
      { sandboxId: "sbx-a", namespace: "ns", podName: "p-0", time: "2026-01-01T00:00:10Z", expected: stored },
    ]);
    expect(
      planActivityWrites([routed({ lastActive: stored, idleTimeoutSeconds: 600 })], seen, new Map()),
    ).toEqual([]);
    // Nothing stored yet: the first traffic is written, over nothing it must test.
    expect(planActivityWrites([routed()], seen, new Map())).toEqual([
      { sandboxId: "sbx-a", namespace: "ns", podName: "p-0", time: "2026-01-01T00:00:10Z" },
    ]);
  });

  it("compares with this host's own last write when the watch has not shown it yet", () => {
    const seen = new Map([["sbx-a", at("10")]]);
    const r = routed({ lastActive: "2026-01-01T00:00:00Z", idleTimeoutSeconds: 5 });
    expect(planActivityWrites([r], seen, new Map([["sbx-a", "2026-01-01T00:00:10Z"]]))).toEqual([]);
    // This host's own write is newer than the watch's view: that is what the write expects to replace.
    expect(planActivityWrites([r], seen, new Map([["sbx-a", "2026-01-01T00:00:08Z"]]))).toMatchObject([
      { expected: "2026-01-01T00:00:08Z" },
    ]);
    // An older write than the stored annotation does not lower the bar.
    const fresh = routed({ lastActive: "2026-01-01T00:00:10Z", idleTimeoutSeconds: 5 });
    expect(planActivityWrites([fresh], seen, new Map([["sbx-a", "2026-01-01T00:00:01Z"]]))).toEqual([]);
  });

  it("never writes for a sandbox without a route or without traffic, nor moves last-active back", () => {
    const seen = new Map([
      ["sbx-gone", at("10")],
      ["sbx-a", at("05")],
    ]);
    expect(planActivityWrites([routed({ lastActive: "2026-01-01T00:00:09Z" })], seen, new Map())).toEqual([]);
    expect(planActivityWrites([routed({ sandboxId: "sbx-quiet" })], seen, new Map())).toEqual([]);
  });
});
