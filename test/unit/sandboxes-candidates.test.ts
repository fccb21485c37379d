import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { orderCandidates, pickIdle } from "../../lib/claims/candidates.ts";
import type { EnvAutoscalingGroup } from "../../lib/crd/autoscaling.ts";
import {
  SANDBOX_PHASE_LABEL,
  SANDBOX_POOL_LABEL,
  type SandboxPhase,
  SCALE_DOWN_PROTECTED_ANNOTATION,
} from "../../lib/crd/keys.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { poolOwnerReference } from "../../lib/membership/pod-ownership.ts";
import { planScale, scaleDownPolicyFor } from "../../lib/pool/scale-plan.ts";
import { asMember, envOf } from "../support/env-member.ts";
import { mulberry32 } from "../support/seeded-random.ts";

const NOW = new Date("2026-05-10T12:00:00Z");
const ago = (seconds: number) => new Date(NOW.getTime() - seconds * 1000).toISOString();
/** STANDALONE is a pool no Env owns (scaled by hand). */
const STANDALONE = {
  metadata: { name: "web", namespace: "ns", uid: "pool-uid" },
  spec: { replicas: 1 },
} as unknown as SandboxPool;
/** POOL is the same pool as a member of Env "e"'s scaling group "g" (its labels, as the Env stamps them). */
const POOL = asMember(STANDALONE, "g");
const OWNER = poolOwnerReference(POOL);
/** envWith is Env "e" whose (disabled) group has the given scale-down policy (undefined: none). */
const envWith = (scaleDownPolicy?: Record<string, number>, group = "g"): SandboxEnv =>
  envOf({
    name: group,
    enabled: false,
    ...(scaleDownPolicy ? { scaleDownPolicy } : {}),
  } as EnvAutoscalingGroup);
/** ENV gives POOL a 60 s protection window. */
const ENV = envWith({ protectionWindowSeconds: 60 });

interface PodOptions {
  phase?: SandboxPhase | "";
  ready?: "True" | "False" | "none";
  podPhase?: string;
  deleting?: boolean;
  mark?: string;
  /** owners replaces the pod's ownerReferences (default: the pool's controller reference). */
  owners?: V1OwnerReference[];
  pool?: string;
}

function pod(name: string, o: PodOptions = {}): V1Pod {
  const phase = o.phase ?? "idle";
  const ready = o.ready ?? "True";
  return {
    metadata: {
      name,
      labels: { [SANDBOX_POOL_LABEL]: o.pool ?? "web", ...(phase ? { [SANDBOX_PHASE_LABEL]: phase } : {}) },
      ownerReferences: o.owners ?? [OWNER],
      annotations: o.mark !== undefined ? { [SCALE_DOWN_PROTECTED_ANNOTATION]: o.mark } : {},
      ...(o.deleting ? { deletionTimestamp: NOW } : {}),
    },
    status: {
      phase: o.podPhase ?? "Running",
      conditions: ready === "none" ? [] : [{ type: "Ready", status: ready }],
    },
  };
}

const names = (pods: V1Pod[]) => pods.map((p) => p.metadata?.name);
/** keep is a random that makes Fisher-Yates keep the order (j = i every time). */
const keep = () => 0.999_999;

describe("orderCandidates: which pods are claimable", () => {
  it.each<[string, PodOptions, boolean]>([
    ["idle, ready, Running", {}, true],
    ["starting", { phase: "starting" }, false],
    ["running", { phase: "running" }, false],
    ["stopping", { phase: "stopping" }, false],
    ["failed", { phase: "failed" }, false],
    ["no phase label", { phase: "" }, false],
    ["terminating", { deleting: true }, false],
    ["not ready", { ready: "False" }, false],
    ["no Ready condition yet", { ready: "none" }, false],
    ["pod phase Pending", { podPhase: "Pending" }, false],
    ["pod phase Failed", { podPhase: "Failed" }, false],
    ["empty scale-down mark: unmarked", { mark: "" }, true],
    ["marked just now", { mark: ago(0) }, true],
    ["marked 59.999 s ago (inside the window)", { mark: ago(59.999) }, true],
    ["marked exactly the window ago (the pool deletes it now)", { mark: ago(60) }, false],
    ["marked after the window", { mark: ago(3600) }, false],
    ["marked in the future (clock skew): inside the window", { mark: ago(-30) }, true],
    ["unparseable mark (never deleted for it)", { mark: "soon" }, true],
    ["marked inside the window but terminating", { mark: ago(1), deleting: true }, false],
    // Ownership: the pool label alone never makes a pod the pool's.
    ["the pool label, no ownerReference", { owners: [] }, false],
    ["a controller reference to another pool uid", { owners: [{ ...OWNER, uid: "other" }] }, false],
    ["the pool's uid, but not as controller", { owners: [{ ...OWNER, controller: false }] }, false],
    ["the pool's uid under another kind", { owners: [{ ...OWNER, kind: "ReplicaSet" }] }, false],
    [
      "the pool's uid in another API group",
      { owners: [{ ...OWNER, apiVersion: "evil.io/v1alpha1" }] },
      false,
    ],
    ["controlled by the pool, labelled with another pool", { pool: "other" }, false],
    [
      "controlled by the pool under a later API version",
      { owners: [{ ...OWNER, apiVersion: "agents.navix.sh/v1" }] },
      true,
    ],
  ])("%s → %s", (_, options, claimable) => {
    expect(names(orderCandidates(POOL, [pod("p", options)], NOW, ENV, keep))).toEqual(claimable ? ["p"] : []);
  });

  it("a zero window makes every marked pod unclaimable", () => {
    const zero = envWith({ protectionWindowSeconds: 0 });
    expect(orderCandidates(POOL, [pod("p", { mark: ago(0) })], NOW, zero, keep)).toEqual([]);
  });

  it("returns the pod objects themselves and leaves the input alone", () => {
    const pods = [pod("a"), pod("b", { phase: "running" }), pod("c")];
    const copy = [...pods];
    const out = orderCandidates(POOL, pods, NOW, ENV, () => 0);
    expect(pods).toEqual(copy);
    expect(out.every((p) => pods.includes(p))).toBe(true);
  });
});

describe("orderCandidates: order", () => {
  const pods = [
    pod("m1", { mark: ago(10) }),
    pod("u1"),
    pod("m2", { mark: "garbled" }),
    pod("u2"),
    pod("u3"),
    pod("busy", { phase: "running" }),
  ];

  it("unmarked pods come before marked ones", () => {
    expect(names(orderCandidates(POOL, pods, NOW, ENV, keep))).toEqual(["u1", "u2", "u3", "m1", "m2"]);
  });

  it("each group is shuffled with Fisher-Yates using the given random", () => {
    // random() = 0 always swaps position i with 0: [u1,u2,u3] → [u3,u2,u1] → [u2,u3,u1].
    expect(names(orderCandidates(POOL, pods, NOW, ENV, () => 0))).toEqual(["u2", "u3", "u1", "m2", "m1"]);
  });

  it("a random() of exactly 1 does not step out of the array", () => {
    expect(names(orderCandidates(POOL, pods, NOW, ENV, () => 1))).toEqual(["u1", "u2", "u3", "m1", "m2"]);
  });

  it("concurrent callers spread over the pods: every pod is tried first about equally often", () => {
    const idle = Array.from({ length: 5 }, (_, i) => pod(`p${i}`));
    const random = mulberry32(42);
    const firsts = new Map<string, number>();
    const runs = 5000;
    for (let i = 0; i < runs; i++) {
      const order = names(orderCandidates(POOL, idle, NOW, ENV, random));
      expect([...order].sort()).toEqual(["p0", "p1", "p2", "p3", "p4"]);
      const first = order[0] as string;
      firsts.set(first, (firsts.get(first) ?? 0) + 1);
    }
    expect(firsts.size).toBe(5);
    for (const count of firsts.values()) {
      expect(count).toBeGreaterThan(runs / 5 - 150);
      expect(count).toBeLessThan(runs / 5 + 150);
    }
  });

  it("two callers with different randoms start on different pods", () => {
    const idle = Array.from({ length: 8 }, (_, i) => pod(`p${i}`));
    const a = names(orderCandidates(POOL, idle, NOW, ENV, mulberry32(1)));
    const b = names(orderCandidates(POOL, idle, NOW, ENV, mulberry32(2)));
    expect(a[0]).not.toBe(b[0]);
  });
});

describe("pickIdle: which pod of a host's feed a create takes", () => {
  const at = Date.parse("2026-11-24T12:00:00Z");
  const feed: [string, { pod: V1Pod; markedAt?: number }][] = [
    ["a", { pod: pod("a") }],
    ["b", { pod: pod("b") }],
    ["m", { pod: pod("m"), markedAt: at - 5_000 }],
    ["old", { pod: pod("old"), markedAt: at - 10_000 }],
  ];
  it("takes an unmarked pod no other create holds, at random", () => {
    expect(pickIdle(POOL, feed, new Set(), at, undefined, () => 0)).toBe("a");
    expect(pickIdle(POOL, feed, new Set(), at, undefined, () => 0.99)).toBe("b");
    expect(pickIdle(POOL, feed, new Set(["a"]), at, undefined, () => 0)).toBe("b");
  });
  it("takes a marked pod only when no unmarked one is free, and only inside its window", () => {
    expect(pickIdle(POOL, feed, new Set(["a", "b"]), at, undefined, () => 0.99)).toBe("m");
    expect(pickIdle(POOL, feed, new Set(["a", "b", "m"]), at, undefined, () => 0)).toBeUndefined();
    expect(pickIdle(POOL, [], new Set(), at, undefined, () => 0)).toBeUndefined();
  });
  it("never takes a pod the pool does not own", () => {
    const forged: [string, { pod: V1Pod }][] = [
      ["forged", { pod: pod("forged", { owners: [] }) }],
      ["other", { pod: pod("other", { owners: [{ ...OWNER, uid: "other" }] }) }],
    ];
    expect(pickIdle(POOL, forged, new Set(), at, undefined, () => 0)).toBeUndefined();
    expect(pickIdle(POOL, [...forged, ...feed], new Set(), at, undefined, () => 0)).toBe("a");
  });
});

describe("the claim side's protection window is the pool side's (issue #26)", () => {
  // A pool's Pods are marked, then deleted once protectionWindowSeconds of its scale-down policy
  // passed (planScale with scaleDownPolicyFor); a create may claim a marked pod until exactly then.
  const marked30 = pod("p", { mark: ago(30) });
  const feedOf = (seconds: number): [string, { pod: V1Pod; markedAt: number }][] => [
    ["p", { pod: pod("p"), markedAt: NOW.getTime() - seconds * 1000 }],
  ];

  it("a member of a group whose policy says 60 s: a pod marked 30 s ago is still claimable", () => {
    expect(names(orderCandidates(POOL, [marked30], NOW, ENV, keep))).toEqual(["p"]);
    expect(pickIdle(POOL, feedOf(30), new Set(), NOW.getTime(), ENV, keep)).toBe("p");
  });

  it.each<[string, SandboxPool, SandboxEnv | undefined, number]>([
    ["a member, its group's window", POOL, ENV, 60],
    [
      "a member, the group's policy without the window: the CRD default",
      POOL,
      envWith({ idleTimeoutSeconds: 5 }),
      10,
    ],
    ["a member, the group without a policy: the CRD default", POOL, envWith(), 10],
    [
      "a member whose Env lacks its group: the CRD default",
      POOL,
      envWith({ protectionWindowSeconds: 60 }, "h"),
      10,
    ],
    ["a member whose Env was not found: the CRD default", POOL, undefined, 10],
    ["a standalone pool, whatever Env is passed: the CRD default", STANDALONE, ENV, 10],
  ])("%s: claimable until the pool deletes", (_what, pool, env, window) => {
    expect(scaleDownPolicyFor(pool, env).protectionWindowSeconds).toBe(window);
    for (const seconds of [0, 9.999, 10, 30, 59.999, 60, 3600]) {
      const marked = pod(`${pool.metadata?.name}-0`, { mark: ago(seconds) });
      const policy = scaleDownPolicyFor(pool, env);
      const deleted = planScale(
        { ...pool, spec: { ...pool.spec, replicas: 0 } },
        [marked],
        NOW,
        policy,
        () => undefined,
      );
      const claimable = orderCandidates(pool, [marked], NOW, env, keep).length === 1;
      expect({ seconds, claimable }).toEqual({ seconds, claimable: seconds < window });
      expect({ seconds, deleted: deleted.delete.length === 1 }).toEqual({ seconds, deleted: !claimable });
      const fed = pickIdle(pool, feedOf(seconds), new Set(), NOW.getTime(), env, keep);
      expect({ seconds, fed: fed !== undefined }).toEqual({ seconds, fed: claimable });
    }
  });
});
