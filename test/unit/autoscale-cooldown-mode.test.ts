import { describe, expect, it } from "vitest";
import { decide } from "../../lib/autoscale/decide.ts";
import type { CooldownMode } from "../../lib/autoscale/group-decision.ts";
import type { MemberLoad } from "../../lib/autoscale/member-load.ts";
import type { PoolAutoScalingStatus } from "../../lib/crd/autoscaling.ts";
import { autoscalingGroup } from "../support/autoscaling-group.ts";

const NOW = new Date("2026-11-26T10:00:00Z");
const agoText = (s: number) => new Date(NOW.getTime() - s * 1000).toISOString().replace(/\.\d+Z$/, "Z");

/** busy is a member with `replicas` Pods all taken, none idle, and `pending` creates waiting. */
function busy(replicas: number, pending: number, autoscaling?: PoolAutoScalingStatus): MemberLoad {
  return {
    name: "a",
    clusterId: "local",
    config: { scalingGroup: "default" },
    desired: replicas,
    pool: { metadata: { name: "a", generation: 1 }, spec: { replicas } as never },
    existing: replicas,
    idle: [],
    stopping: 0,
    pending,
    lastCreate: NOW,
    autoscaling,
    probe: { result: "Enough" },
  };
}

const run = (m: MemberLoad, cooldownMode?: CooldownMode, minReplicas = 0) =>
  decide(
    { group: autoscalingGroup({ minReplicas }), members: [m] },
    NOW,
    cooldownMode ? { cooldownMode } : {},
  );

describe("decide: cooldownMode (ADR 0034)", () => {
  const recent = { lastScaleUpTime: agoText(10) }; // within the 30 s cooldown

  it("waiters (the default): within the cooldown, the waiting demand is still added", () => {
    expect(Object.fromEntries(run(busy(10, 3, recent)).replicas)).toEqual({ a: 13 });
    expect(Object.fromEntries(run(busy(10, 3, recent), "waiters").replicas)).toEqual({ a: 13 });
  });

  it("strict: within the cooldown, nothing grows and no probe is recorded, however many wait", () => {
    const d = run(busy(10, 3, recent), "strict");
    expect(d.replicas.size).toBe(0);
    expect(d.changes).toEqual([]);
    expect(d.stamp).toBeUndefined();
    // Only the idleZeroSince bookkeeping may change: no scale-up attempt is written.
    expect(d.autoscaling.get("a")?.lastScaleUpAttemptTime).toBeUndefined();
  });

  it("strict: once the cooldown passed, grows as the default does (the mode's growth or the demand)", () => {
    const cooled = { lastScaleUpTime: agoText(30) };
    expect(Object.fromEntries(run(busy(10, 3, cooled), "strict").replicas)).toEqual({ a: 15 });
    expect(Object.fromEntries(run(busy(10, 9, cooled), "strict").replicas)).toEqual({ a: 19 });
    expect(run(busy(10, 9, cooled), "strict").changes[0]?.reason).toBe("Reactive");
  });

  it("strict: the group's minimum is still restored within the cooldown, the waiters beyond it are not served", () => {
    const d = run(busy(2, 9, recent), "strict", 4);
    expect(Object.fromEntries(d.replicas)).toEqual({ a: 4 });
    expect(d.changes).toEqual([{ member: "a", direction: "up", reason: "BelowMinReplicas", from: 2, to: 4 }]);
    // The default serves them in the same run: 9 waiting − 2 ordered by the minimum = 7 more.
    expect(Object.fromEntries(run(busy(2, 9, recent), "waiters", 4).replicas)).toEqual({ a: 11 });
  });
});
