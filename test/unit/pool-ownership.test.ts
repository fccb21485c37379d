import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { PoolScaleDownPolicy } from "../../lib/crd/autoscaling.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import {
  orphanedFrom,
  ownedBy,
  partitionPods,
  poolOwnerReference,
} from "../../lib/membership/pod-ownership.ts";
import { renderPod } from "../../lib/pool/render-pod.ts";
import { FOREIGN_PODS_ANNOTATION, planForeignPods } from "../../lib/reconcile/foreign-pods.ts";
import { planMaterialise } from "../../lib/reconcile/materialise.ts";

// Which pods a pool owns (the pool label AND its controller reference), what the pool does with
// the others (nothing, but one Warning each and no create on a name they hold), and which pods are
// orphans of a pool that is gone; all on plain objects.

const NOW = new Date("2026-12-01T12:00:00Z");
const policy = v.parse(PoolScaleDownPolicy, {});

/** POOL_META is what pool() reads of the pool's metadata: as the apiserver stores it. */
const POOL_META = {
  name: "p",
  namespace: "ns",
  uid: "pool-uid",
  resourceVersion: "10",
  creationTimestamp: "2026-12-01T10:00:00Z",
  finalizers: ["agentbox.navix.sh/finalizer"],
};

function pool(over: Partial<NonNullable<SandboxPool["metadata"]>> = {}, replicas = 2): SandboxPool {
  const template = { spec: { containers: [{ name: "main", image: "base:1" }] } };
  const spec = { replicas, podCreationImagePolicy: "IdleImage", idleImage: "idle:1", template };
  return { metadata: { ...POOL_META, ...over }, spec } as SandboxPool;
}

const OWNER = poolOwnerReference(pool());

/**
 * pod is a pod as the pool renders it (renderPod) and the apiserver stores it, with other
 * ownerReferences (`owners`), pool label or creation time when given.
 */
function pod(name: string, owners?: V1OwnerReference[], o: { label?: string; at?: string } = {}): V1Pod {
  const rendered = renderPod(pool(), 0);
  const meta = rendered.metadata ?? {};
  return {
    ...rendered,
    metadata: {
      ...meta,
      name,
      uid: `${name}-uid`,
      resourceVersion: "5",
      creationTimestamp: (o.at ?? "2026-12-01T11:00:00Z") as unknown as Date,
      labels: { ...meta.labels, "agentbox.navix.sh/sandbox-pool": o.label ?? "p" },
      ownerReferences: owners ?? meta.ownerReferences,
    },
    status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
  };
}

describe("ownedBy / partitionPods", () => {
  it("a pod is the pool's only with the pool label and the pool's uid as controller (as renderPod writes them)", () => {
    const own = pod("p-0");
    const forged = pod("forged", []);
    const otherUid = pod("other", [{ ...OWNER, uid: "x" }]);
    const notController = pod("loose", [{ ...OWNER, controller: false }]);
    const relabelled = pod("moved", [OWNER], { label: "q" });
    expect(ownedBy(own, pool())).toBe(true);
    expect(ownedBy(own, pool({ uid: undefined }))).toBe(false);
    const { owned, foreign } = partitionPods(pool(), [own, forged, otherUid, notController, relabelled]);
    expect(owned).toEqual([own]);
    expect(foreign).toEqual([forged, otherUid, notController, relabelled]);
  });
});

describe("orphanedFrom", () => {
  const gone = pod("p-0", [{ ...OWNER, uid: "old-uid" }]);
  it("a pod of a pool that no longer exists is an orphan", () => {
    expect(orphanedFrom(gone, undefined)).toBe(true);
  });
  it("a pod made before the pool of its name was made again is an orphan; one made after is foreign", () => {
    expect(orphanedFrom(gone, pool({ creationTimestamp: "2026-12-01T11:30:00Z" }))).toBe(true);
    expect(orphanedFrom(gone, pool())).toBe(false);
  });
  it("never: the pool's own pods, pods without a pool controller, or naming another pool", () => {
    expect(orphanedFrom(pod("p-0"), pool())).toBe(false);
    expect(orphanedFrom(pod("forged", []), undefined)).toBe(false);
    expect(orphanedFrom(pod("x", [{ ...OWNER, name: "elsewhere" }]), undefined)).toBe(false);
    expect(orphanedFrom(pod("x", [{ ...OWNER, kind: "ReplicaSet" }]), undefined)).toBe(false);
  });
});

describe("planMaterialise with foreign pods", () => {
  it("neither counts, patches nor deletes them, and creates around a slot name one holds", () => {
    const squatter = pod("p-1", []);
    squatter.metadata = { ...squatter.metadata, finalizers: [] };
    const actions = planMaterialise(pool({}, 3), [pod("p-0"), squatter], policy, NOW);
    expect(actions.map((a) => a.why)).toEqual(["create pod in slot 3", "create pod in slot 2"]);
    expect(actions.every((a) => a.target.name !== "p-1")).toBe(true);
  });

  it("never moves a squatted slot onto a surge slot the plan already takes", () => {
    // p-1 is terminating (its successor surges to slot 2); p-0's name is a foreign pod's.
    const leaving = pod("p-1");
    leaving.metadata = { ...leaving.metadata, deletionTimestamp: NOW };
    const actions = planMaterialise(pool({}, 2), [leaving, pod("p-0", [])], policy, NOW);
    expect(actions.map((a) => a.why)).toEqual(["create pod in slot 3", "create pod in slot 2"]);
  });

  it("takes foreign pods passed apart the same way", () => {
    const squatter = pod("p-0", []);
    const actions = planMaterialise(pool({}, 1), [], policy, NOW, undefined, [squatter]);
    expect(actions.map((a) => a.why)).toEqual(["create pod in slot 1"]);
  });

  it("lets a deleted pool go once its own pods are gone, leaving foreign ones alone", () => {
    const deleting = pool({ deletionTimestamp: "2026-12-01T11:59:00Z" });
    const actions = planMaterialise(deleting, [pod("forged", [])], policy, NOW);
    expect(actions.map((a) => [a.target.kind, a.why])).toEqual([
      ["SandboxPool", "every pod is gone; let the pool go"],
    ]);
  });
});

describe("planForeignPods", () => {
  const path = `/metadata/annotations/${FOREIGN_PODS_ANNOTATION.replace("/", "~1")}`;
  const a = pod("a", []);
  const b = pod("b", [{ ...OWNER, uid: "x" }]);

  it("reports each unreported foreign pod once, with a Warning naming it, each write tested on the last", () => {
    const actions = planForeignPods(pool(), [b, a]);
    expect(actions.map((x) => x.event?.reason)).toEqual(["ForeignPod", "ForeignPod"]);
    expect(actions[0]?.event?.note).toMatch(/^Pod a \(uid a-uid\) .*ignored/);
    expect(actions[1]?.event?.note).toMatch(/^Pod b /);
    expect(actions.map((x) => x.write)).toEqual([
      {
        op: "patch",
        patch: [
          { op: "test", path: "/metadata/resourceVersion", value: "10" },
          { op: "add", path: "/metadata/annotations", value: {} },
          { op: "add", path, value: "a-uid" },
        ],
      },
      {
        op: "patch",
        patch: [
          { op: "test", path, value: "a-uid" },
          { op: "add", path, value: "a-uid,b-uid" },
        ],
      },
    ]);
  });

  it("says nothing of pods already reported, and forgets those that are gone", () => {
    const reported = pool({ annotations: { [FOREIGN_PODS_ANNOTATION]: "a-uid,b-uid" } });
    expect(planForeignPods(reported, [a, b])).toEqual([]);
    const [forget] = planForeignPods(reported, [b]);
    expect(forget?.event).toBeUndefined();
    expect(forget?.write).toEqual({
      op: "patch",
      patch: [
        { op: "test", path, value: "a-uid,b-uid" },
        { op: "add", path, value: "b-uid" },
      ],
    });
    const [last] = planForeignPods(reported, []);
    expect(last?.write).toEqual({
      op: "patch",
      patch: [
        { op: "test", path, value: "a-uid,b-uid" },
        { op: "remove", path },
      ],
    });
  });

  it("writes nothing for a pool without foreign pods, or one being deleted", () => {
    expect(planForeignPods(pool(), [])).toEqual([]);
    expect(planForeignPods(pool({ deletionTimestamp: "2026-12-01T11:59:00Z" }), [a])).toEqual([]);
  });
});
