import { describe, expect, it } from "vitest";
import { decide } from "../../lib/autoscale/decide.ts";
import type { MemberLoad } from "../../lib/autoscale/member-load.ts";
import { byScaleUpOrder, growth, type MemberKey } from "../../lib/autoscale/policies.ts";
import type { ProbeResult } from "../../lib/autoscale/probe.ts";
import type { PoolAutoScalingStatus } from "../../lib/crd/autoscaling.ts";
import type { EnvClusterMemberConfig } from "../../lib/crd/sandbox-env.ts";
import { autoscalingGroup } from "../support/autoscaling-group.ts";

const NOW = new Date("2026-11-23T12:00:00Z");
const ago = (s: number) => new Date(NOW.getTime() - s * 1000);
const agoText = (s: number) =>
  ago(s)
    .toISOString()
    .replace(/\.\d+Z$/, "Z");
const NOW_TEXT = agoText(0);

/** member is one MemberLoad: `idle` are the idle Pods' idle ages in seconds. */
function member(
  name: string,
  o: {
    desired?: number;
    existing?: number;
    idle?: number[];
    stopping?: number;
    pending?: number;
    lastCreateAgo?: number;
    config?: Partial<EnvClusterMemberConfig>;
    autoscaling?: PoolAutoScalingStatus;
    probe?: ProbeResult;
    missing?: boolean;
  } = {},
): MemberLoad {
  const idle = (o.idle ?? []).map((age, i) => ({ name: `${name}-${i}`, since: ago(age) }));
  const desired = o.desired ?? idle.length;
  return {
    name,
    clusterId: "local",
    config: o.config && { scalingGroup: "default", ...o.config },
    desired,
    pool: o.missing ? undefined : { metadata: { name, generation: 7 }, spec: { replicas: desired } as never },
    existing: o.existing ?? desired,
    idle,
    stopping: o.stopping ?? 0,
    pending: o.pending ?? 0,
    lastCreate: o.lastCreateAgo === undefined ? undefined : ago(o.lastCreateAgo),
    autoscaling: o.autoscaling,
    probe: o.probe ?? { result: "Enough" },
  };
}

const group = autoscalingGroup;

const replicas = (d: ReturnType<typeof decide>) => Object.fromEntries(d.replicas);

describe("growth per mode", () => {
  it.each([
    ["Conservative", 0, undefined, 1],
    ["Conservative", 10, 20, 1],
    ["Default", 0, undefined, 1],
    ["Default", 1, undefined, 1],
    ["Default", 5, undefined, 3],
    ["Aggressive", 0, 10, 1],
    ["Aggressive", 4, 10, 4],
    ["Aggressive", 8, 10, 2],
  ] as const)("%s from %i (max %s) adds %i", (mode, current, max, added) => {
    expect(growth(mode, current, max)).toBe(added);
  });
});

describe("decide: triggers and gates", () => {
  it("never touches a disabled group", () => {
    const d = decide(
      { group: group({ enabled: false, minReplicas: 5 }), members: [member("a", { pending: 9 })] },
      NOW,
    );
    expect(d.replicas.size).toBe(0);
    expect(d.autoscaling.size).toBe(0);
  });

  it("reactive: waiting creates no idle, stopping or ordered pod serves; bypasses cooldown and quiet window", () => {
    const a = member("a", {
      desired: 2,
      existing: 1,
      idle: [5],
      stopping: 1,
      pending: 6,
      autoscaling: { lastScaleUpTime: agoText(1) },
    });
    const d = decide({ group: group(), members: [a] }, NOW);
    // 6 waiting - 1 idle - 1 stopping - 1 ordered = 3 unmet, added within the cooldown.
    expect(replicas(d)).toEqual({ a: 5 });
    expect(d.changes).toEqual([{ member: "a", direction: "up", reason: "Reactive", from: 2, to: 5 }]);
    expect(d.autoscaling.get("a")).toMatchObject({
      lastScaleUpTime: NOW_TEXT,
      lastScaleUpAttemptTime: NOW_TEXT,
      lastScaleUpAttemptResult: "Enough",
      observedGeneration: 7,
    });
  });

  it("reactive: waiting creates already covered by ordered pods add nothing", () => {
    const d = decide(
      { group: group(), members: [member("a", { desired: 3, existing: 0, pending: 3 })] },
      NOW,
    );
    expect(d.replicas.size).toBe(0);
  });

  it("reactive: within the cooldown adds just the demand, after it the mode's growth when larger", () => {
    const recent = member("a", {
      desired: 10,
      existing: 10,
      pending: 1,
      autoscaling: { lastScaleUpTime: agoText(29) },
    });
    expect(replicas(decide({ group: group(), members: [recent] }, NOW))).toEqual({ a: 11 });
    const cooled = member("a", {
      desired: 10,
      existing: 10,
      pending: 1,
      autoscaling: { lastScaleUpTime: agoText(30) },
    });
    expect(replicas(decide({ group: group(), members: [cooled] }, NOW))).toEqual({ a: 15 });
  });

  it("reactive growth follows the mode when it exceeds the demand", () => {
    const a = member("a", { desired: 10, existing: 10, pending: 1 });
    expect(replicas(decide({ group: group(), members: [a] }, NOW))).toEqual({ a: 15 });
    expect(replicas(decide({ group: group({ up: { mode: "Conservative" } }), members: [a] }, NOW))).toEqual({
      a: 11,
    });
    const aggressive = group({ up: { mode: "Aggressive" }, maxReplicas: 16 });
    expect(replicas(decide({ group: aggressive, members: [a] }, NOW))).toEqual({ a: 16 });
  });

  it("idle-zero: starts idleZeroSince at the first run with no idle pod, clears it when one is idle", () => {
    const fresh = decide({ group: group(), members: [member("a", { desired: 1, existing: 1 })] }, NOW);
    expect(fresh.autoscaling.get("a")).toEqual({ idleZeroSince: NOW_TEXT, observedGeneration: 7 });
    expect(fresh.replicas.size).toBe(0);
    const back = decide(
      { group: group(), members: [member("a", { idle: [1], autoscaling: { idleZeroSince: agoText(40) } })] },
      NOW,
    );
    expect(back.autoscaling.get("a")).toEqual({ observedGeneration: 7 });
  });

  it("proactive: idle zero for idleThresholdSeconds with a recent create scales up by the mode", () => {
    const at = (zeroFor: number, lastCreateAgo?: number, lastUp?: number) =>
      member("a", {
        desired: 4,
        existing: 4,
        ...(lastCreateAgo !== undefined ? { lastCreateAgo } : {}),
        autoscaling: {
          idleZeroSince: agoText(zeroFor),
          ...(lastUp !== undefined ? { lastScaleUpTime: agoText(lastUp) } : {}),
        },
      });
    const run = (m: MemberLoad, g = group()) => decide({ group: g, members: [m] }, NOW);
    expect(replicas(run(at(30, 10)))).toEqual({ a: 6 });
    expect(run(at(30, 10)).changes[0]?.reason).toBe("IdleZero");
    expect(run(at(29, 10)).replicas.size).toBe(0); // threshold not reached
    expect(run(at(30, 301)).replicas.size).toBe(0); // quiet window: no create for 300 s
    expect(run(at(30)).replicas.size).toBe(0); // never a create
    expect(replicas(run(at(30, 301), group({ up: { idleZeroQuietWindowSeconds: 0 } })))).toEqual({ a: 6 });
    expect(run(at(30, 10, 29)).replicas.size).toBe(0); // cooldown after the last scale-up
    expect(replicas(run(at(30, 10, 30)))).toEqual({ a: 6 });
    expect(run(at(30, 10), group({ up: { idleThresholdSeconds: 0 } })).replicas.size).toBe(0);
  });

  it("proactive waits while ordered pods are on their way", () => {
    const a = member("a", {
      desired: 4,
      existing: 3,
      lastCreateAgo: 1,
      autoscaling: { idleZeroSince: agoText(99) },
    });
    expect(decide({ group: group(), members: [a] }, NOW).replicas.size).toBe(0);
  });

  it("proactive looks at the whole group: an idle pod in another member holds it back", () => {
    const a = member("a", { desired: 2, lastCreateAgo: 1, autoscaling: { idleZeroSince: agoText(99) } });
    const b = member("b", { idle: [5] });
    expect(decide({ group: group(), members: [a, b] }, NOW).replicas.size).toBe(0);
  });
});

describe("decide: saturation", () => {
  it("an Insufficient probe records the attempt, does not grow, and passes the share on", () => {
    const a = member("a", {
      pending: 2,
      config: { priority: 0 },
      probe: { result: "Insufficient", message: "1 pod(s) Pending as Unschedulable: 0/1 nodes" },
    });
    const b = member("b", { config: { priority: 1 } });
    const d = decide({ group: group(), members: [a, b] }, NOW);
    expect(replicas(d)).toEqual({ b: 2 });
    expect(d.autoscaling.get("a")).toMatchObject({
      lastScaleUpAttemptTime: NOW_TEXT,
      lastScaleUpAttemptResult: "Insufficient",
      scaleUpErrorMessage: "1 pod(s) Pending as Unschedulable: 0/1 nodes",
    });
    expect(d.autoscaling.get("a")).not.toHaveProperty("lastScaleUpTime");
  });

  it("a saturated member is not probed again until saturationCooldownSeconds passed", () => {
    const saturated = (s: number) =>
      member("a", {
        pending: 1,
        autoscaling: {
          lastScaleUpAttemptTime: agoText(s),
          lastScaleUpAttemptResult: "Failed",
          scaleUpErrorMessage: "x",
        },
      });
    const held = decide({ group: group(), members: [saturated(59)] }, NOW);
    expect(held.replicas.size).toBe(0);
    expect(held.autoscaling.get("a")?.lastScaleUpAttemptTime).toBe(agoText(59));
    const retried = decide({ group: group(), members: [saturated(60)] }, NOW);
    expect(replicas(retried)).toEqual({ a: 1 });
    expect(retried.autoscaling.get("a")).toMatchObject({ lastScaleUpAttemptResult: "Enough" });
    expect(retried.autoscaling.get("a")).not.toHaveProperty("scaleUpErrorMessage");
  });
  it("does not count replicas a pool cannot create as on their way: the waiters go to the next member", () => {
    // q1 is at its quota: 2 pods exist (idle, claimed meanwhile), 3 more were ordered and refused.
    const refused: ProbeResult = { result: "Insufficient", message: "pod create refused for quota: 403" };
    const q1 = member("q1", { desired: 5, existing: 2, pending: 5, config: { priority: 0 }, probe: refused });
    const q2 = member("q2", { config: { priority: 1 } });
    const d = decide({ group: group(), members: [q1, q2] }, NOW);
    expect(replicas(d)).toEqual({ q2: 5 });
    expect(d.autoscaling.get("q1")).toMatchObject({
      lastScaleUpAttemptTime: NOW_TEXT,
      lastScaleUpAttemptResult: "Insufficient",
    });
    // Once saturated, its refused replicas still count for nothing while q2's are on their way.
    const saturatedQ1 = member("q1", {
      desired: 5,
      existing: 2,
      pending: 5,
      config: { priority: 0 },
      probe: refused,
      autoscaling: d.autoscaling.get("q1"),
    });
    const q2Growing = member("q2", { desired: 5, existing: 0, config: { priority: 1 } });
    expect(decide({ group: group(), members: [saturatedQ1, q2Growing] }, NOW).replicas.size).toBe(0);
  });

  it("lets proactive growth go on when the only replicas ordered are ones a pool cannot create", () => {
    const stuck = member("a", {
      desired: 3,
      existing: 2,
      lastCreateAgo: 10,
      config: { priority: 0 },
      probe: { result: "Failed", message: "InvalidPodTemplate" },
      autoscaling: { idleZeroSince: agoText(31) },
    });
    const b = member("b", {
      desired: 1,
      existing: 1,
      config: { priority: 1 },
      autoscaling: { idleZeroSince: agoText(31) },
    });
    const d = decide({ group: group(), members: [stuck, b] }, NOW);
    expect(d.changes).toEqual([expect.objectContaining({ member: "b", reason: "IdleZero" })]);
  });

  it("counts pods ordered in any member, so growth sent past a saturated member is not asked for again", () => {
    const a = member("a", {
      pending: 3,
      config: { priority: 0 },
      autoscaling: {
        lastScaleUpAttemptTime: agoText(5),
        lastScaleUpAttemptResult: "Insufficient",
        scaleUpErrorMessage: "quota",
      },
    });
    const b = member("b", { desired: 3, existing: 0, config: { priority: 1 } });
    expect(decide({ group: group(), members: [a, b] }, NOW).replicas.size).toBe(0);
    const c = member("c", { desired: 2, existing: 0, config: { priority: 1 } });
    expect(replicas(decide({ group: group(), members: [a, c] }, NOW))).toEqual({ c: 3 });
  });
});

describe("decide: scale-down", () => {
  it("removes only pods idle for idleTimeoutSeconds, after stabilizationSeconds", () => {
    const a = (lastDown?: number) =>
      member("a", {
        idle: [400, 300, 299],
        ...(lastDown !== undefined ? { autoscaling: { lastScaleDownTime: agoText(lastDown) } } : {}),
      });
    const d = decide({ group: group(), members: [a()] }, NOW);
    expect(replicas(d)).toEqual({ a: 1 });
    expect(d.changes[0]).toMatchObject({ reason: "IdleTimeout", direction: "down" });
    expect(d.autoscaling.get("a")?.lastScaleDownTime).toBe(NOW_TEXT);
    expect(decide({ group: group(), members: [a(59)] }, NOW).replicas.size).toBe(0);
    expect(replicas(decide({ group: group(), members: [a(60)] }, NOW))).toEqual({ a: 1 });
  });

  it("counts pods already on their way out, and never shrinks while creates wait", () => {
    const going = member("a", { desired: 2, existing: 3, idle: [400, 400] });
    expect(replicas(decide({ group: group(), members: [going] }, NOW))).toEqual({ a: 1 });
    const waiting = member("a", { idle: [400], pending: 1 });
    expect(decide({ group: group(), members: [waiting] }, NOW).replicas.size).toBe(0);
  });

  it("shrinks to zero when the group allows it, and stops at the minimums", () => {
    const idle = () => member("a", { idle: [900, 900, 900] });
    expect(replicas(decide({ group: group(), members: [idle()] }, NOW))).toEqual({ a: 0 });
    expect(replicas(decide({ group: group({ minReplicas: 2 }), members: [idle()] }, NOW))).toEqual({ a: 2 });
    const floored = member("a", { idle: [900, 900, 900], config: { minReplicas: 1 } });
    expect(replicas(decide({ group: group(), members: [floored] }, NOW))).toEqual({ a: 1 });
  });

  it("takes from the highest scale-down priority first; ties by the oldest idle pod, then name", () => {
    const m = (name: string, priority: number, age: number) =>
      member(name, { idle: [age, age], config: { priority } });
    const byPriority = decide(
      { group: group({ minReplicas: 4 }), members: [m("a", 0, 900), m("b", 5, 400), m("c", 1, 900)] },
      NOW,
    );
    expect(replicas(byPriority)).toEqual({ b: 0 });
    const tie = decide(
      { group: group({ minReplicas: 5 }), members: [m("a", 1, 400), m("b", 1, 900), m("c", 1, 900)] },
      NOW,
    );
    expect(replicas(tie)).toEqual({ b: 1 });
    const down = member("x", { idle: [900], config: { priority: 0, scaleDownPriority: 9 } });
    const kept = member("y", { idle: [900], config: { priority: 5, scaleDownPriority: 0 } });
    expect(replicas(decide({ group: group({ minReplicas: 1 }), members: [kept, down] }, NOW))).toEqual({
      x: 0,
    });
  });
});

describe("decide: bounds and order", () => {
  it("raises the group to minReplicas by scale-up order (ties: cluster, then name), each member to its max", () => {
    const d = decide(
      {
        group: group({ minReplicas: 5 }),
        members: [
          member("b", { config: { priority: 1 } }),
          member("c", { config: { priority: 0, maxReplicas: 2 } }),
          member("a", { config: { priority: 1 } }),
        ],
      },
      NOW,
    );
    expect(replicas(d)).toEqual({ c: 2, a: 3 });
    expect(d.changes.map((c) => c.reason)).toEqual(["BelowMinReplicas", "BelowMinReplicas"]);
    const up = decide(
      {
        group: group({ minReplicas: 1 }),
        members: [
          member("x", { config: { priority: 5, scaleUpPriority: 0 } }),
          member("y", { config: { priority: 1 } }),
        ],
      },
      NOW,
    );
    expect(replicas(up)).toEqual({ x: 1 });
  });

  it("keeps the group within maxReplicas and each member within its own bounds", () => {
    const over = decide(
      { group: group({ maxReplicas: 3 }), members: [member("a", { desired: 5, existing: 5 })] },
      NOW,
    );
    expect(replicas(over)).toEqual({ a: 3 });
    expect(over.changes[0]?.reason).toBe("AboveMaxReplicas");
    const capped = decide(
      { group: group({ maxReplicas: 4 }), members: [member("a", { desired: 3, existing: 3, pending: 10 })] },
      NOW,
    );
    expect(replicas(capped)).toEqual({ a: 4 });
    const memberBounds = decide(
      {
        group: group(),
        members: [
          member("a", { desired: 0, config: { minReplicas: 2 } }),
          member("b", {
            desired: 9,
            existing: 9,
            idle: [1, 1, 1, 1, 1, 1, 1, 1, 1],
            config: { maxReplicas: 4 },
          }),
        ],
      },
      NOW,
    );
    expect(replicas(memberBounds)).toEqual({ a: 2, b: 4 });
  });

  it("grows the member whose creates wait first, then by priority; a member at its max is skipped", () => {
    const d = decide(
      {
        group: group(),
        members: [
          member("a", { config: { priority: 0, maxReplicas: 0 } }),
          member("b", { config: { priority: 9 }, pending: 2 }),
        ],
      },
      NOW,
    );
    expect(replicas(d)).toEqual({ b: 2 });
  });

  it("leaves a member without a pool as it is, counting its replicas in the group", () => {
    const d = decide(
      {
        group: group({ maxReplicas: 3 }),
        members: [member("gone", { desired: 3, missing: true }), member("a", { pending: 1 })],
      },
      NOW,
    );
    expect(d.replicas.size).toBe(0);
    expect(d.autoscaling.has("gone")).toBe(false);
  });

  it("writes bookkeeping only when it changed (observedGeneration alone is no change)", () => {
    const steady = member("a", { idle: [5], autoscaling: { observedGeneration: 3 } });
    expect(decide({ group: group(), members: [steady] }, NOW).autoscaling.size).toBe(0);
  });
});

describe("decide: edges", () => {
  it("the quiet window gates only creates older than idleZeroQuietWindowSeconds (300 s still counts)", () => {
    const a = (lastCreateAgo: number) =>
      member("a", { desired: 2, lastCreateAgo, autoscaling: { idleZeroSince: agoText(30) } });
    expect(replicas(decide({ group: group(), members: [a(300)] }, NOW))).toEqual({ a: 3 });
    expect(decide({ group: group(), members: [a(301)] }, NOW).replicas.size).toBe(0);
  });

  it("holds a member saturated for the group's saturationCooldownSeconds, JustRight included", () => {
    const a = (result: "JustRight" | "Failed", ago: number) =>
      member("a", {
        pending: 1,
        autoscaling: { lastScaleUpAttemptTime: agoText(ago), lastScaleUpAttemptResult: result },
      });
    const g = group({ up: { saturationCooldownSeconds: 10 } });
    expect(decide({ group: g, members: [a("JustRight", 9)] }, NOW).replicas.size).toBe(0);
    expect(replicas(decide({ group: g, members: [a("JustRight", 10)] }, NOW))).toEqual({ a: 1 });
    expect(replicas(decide({ group: g, members: [a("Failed", 10)] }, NOW))).toEqual({ a: 1 });
  });

  it("with every member saturated, scales nothing and stamps no scale-up", () => {
    const saturated = {
      lastScaleUpAttemptTime: agoText(5),
      lastScaleUpAttemptResult: "Insufficient" as const,
    };
    const d = decide(
      {
        group: group({ minReplicas: 3 }),
        members: [
          member("a", { pending: 4, autoscaling: saturated }),
          member("b", { autoscaling: saturated }),
        ],
      },
      NOW,
    );
    expect(d.replicas.size).toBe(0);
    expect(d.stamp).toBeUndefined();
    for (const book of d.autoscaling.values()) expect(book).not.toHaveProperty("lastScaleUpTime");
  });

  it("raises the group to its minimum on a fresh member when another is saturated", () => {
    const saturated = {
      lastScaleUpAttemptTime: agoText(5),
      lastScaleUpAttemptResult: "Insufficient" as const,
    };
    const d = decide(
      {
        group: group({ minReplicas: 2 }),
        members: [
          member("a", { config: { priority: 0 }, autoscaling: saturated }),
          member("b", { config: { priority: 1 } }),
        ],
      },
      NOW,
    );
    expect(replicas(d)).toEqual({ b: 2 });
  });

  it("grows for waiting creates beyond the minimum in the same run that raises the group to it", () => {
    const d = decide({ group: group({ minReplicas: 2 }), members: [member("a", { pending: 5 })] }, NOW);
    expect(replicas(d)).toEqual({ a: 5 });
    expect(d.stamp).toEqual({ lastScaleUpTime: NOW_TEXT });
  });

  it("never removes idle pods whose idle time is unknown", () => {
    const unknown: MemberLoad = {
      ...member("a", { desired: 2 }),
      idle: [
        { name: "a-0", since: undefined },
        { name: "a-1", since: undefined },
      ],
    };
    expect(decide({ group: group(), members: [unknown] }, NOW).replicas.size).toBe(0);
  });

  it("orders scale-up by effective priority, then cluster ID, then name", () => {
    const key = (name: string, clusterId: string, config: Partial<EnvClusterMemberConfig>): MemberKey => ({
      name,
      clusterId,
      config: { scalingGroup: "default", ...config },
    });
    const keys = [
      key("b", "east", { priority: 1 }),
      key("a", "west", { priority: 1 }),
      key("c", "east", { priority: 1 }),
      key("z", "west", { priority: 9, scaleUpPriority: 0 }),
    ];
    expect([...keys].sort(byScaleUpOrder).map((k) => `${k.clusterId}/${k.name}`)).toEqual([
      "west/z",
      "east/b",
      "east/c",
      "west/a",
    ]);
  });
});
