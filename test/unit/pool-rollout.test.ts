import { createHash } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { validationIssues } from "../../lib/admission/validate.ts";
import type { PoolScaleDownPolicy } from "../../lib/crd/autoscaling.ts";
import {
  POD_REVISION_LABEL,
  REPLACE_ON_RESET_ANNOTATION,
  SANDBOX_PHASE_LABEL,
  SANDBOX_POOL_LABEL,
  SCALE_DOWN_PROTECTED_ANNOTATION,
  SYNC_SOURCE_LABEL,
} from "../../lib/crd/keys.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { REPLACE_BY_ROLLOUT, releaseIntent } from "../../lib/lifecycle/release-intent.ts";
import { poolOwnerReference } from "../../lib/membership/pod-ownership.ts";
import { poolGauges } from "../../lib/metrics/pool-gauges.ts";
import { lazyPodReset, podReset, podRevision, renderPod } from "../../lib/pool/render-pod.ts";
import { maxSurgeOf, parseMaxSurge } from "../../lib/pool/rollout.ts";
import { planScale } from "../../lib/pool/scale-plan.ts";
import { planMaterialise } from "../../lib/reconcile/materialise.ts";
import { canonicalJson } from "../../lib/util/canonical-json.ts";
import { sha256Hex } from "../../lib/util/sha256.ts";

// Rollouts of a pool's pods (ADR 0031), on plain data: the pod revision, the plan that replaces
// outdated pods surge-first, the release of an outdated pod. The status and its Events are in
// pool-rollout-status.test.ts.

const NOW = new Date("2026-11-26T12:00:00Z");
const POLICY: PoolScaleDownPolicy = {
  idleTimeoutSeconds: 0,
  stabilizationSeconds: 0,
  protectionWindowSeconds: 10,
};
const IDLE_SINCE = "test.example/idle-since";
const idleSince = (p: V1Pod) => {
  const at = p.metadata?.annotations?.[IDLE_SINCE];
  return at ? new Date(at) : undefined;
};

type Spec = Partial<SandboxPool["spec"]>;

function pool(replicas: number, spec: Spec = {}, env: { name: string; value: string }[] = []): SandboxPool {
  return {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxPool",
    metadata: {
      name: "web",
      namespace: "ns",
      uid: "pool-uid",
      resourceVersion: "1",
      finalizers: ["agentbox.navix.sh/finalizer"],
    },
    spec: {
      replicas,
      podCreationImagePolicy: "IdleImage",
      idleImage: "idle:1",
      template: {
        metadata: { labels: { app: "sandbox" } },
        spec: {
          containers: [
            { name: "main", image: "base:1", env, resources: { requests: { cpu: "250m" } } },
            { name: "proxy", image: "proxy:1" },
          ],
        },
      },
      ...spec,
    },
  } as SandboxPool;
}

/** The pool before and after its template changed (an env var): revisions OLD and NEW. */
const oldPool = (replicas: number, spec: Spec = {}) => pool(replicas, spec);
const newPool = (replicas: number, spec: Spec = {}) => pool(replicas, spec, [{ name: "MODE", value: "v2" }]);
const OLD = podRevision(oldPool(1));
const NEW = podRevision(newPool(1));

interface PodOpts {
  phase?: string;
  revision?: string | null;
  ready?: boolean;
  markedFor?: number;
  idleFor?: number;
  terminating?: boolean;
}

let version = 100;
function pod(name: string, o: PodOpts = {}): V1Pod {
  const revision = o.revision === undefined ? NEW : o.revision;
  const annotations: Record<string, string> = {};
  if (o.markedFor !== undefined)
    annotations[SCALE_DOWN_PROTECTED_ANNOTATION] = new Date(NOW.getTime() - o.markedFor * 1000).toISOString();
  if (o.idleFor !== undefined)
    annotations[IDLE_SINCE] = new Date(NOW.getTime() - o.idleFor * 1000).toISOString();
  return {
    metadata: {
      name,
      namespace: "ns",
      uid: `${name}-uid`,
      resourceVersion: String(version++),
      labels: {
        [SANDBOX_POOL_LABEL]: "web",
        [SANDBOX_PHASE_LABEL]: o.phase ?? "idle",
        ...(revision === null ? {} : { [POD_REVISION_LABEL]: revision }),
      },
      annotations,
      finalizers: ["agentbox.navix.sh/sandbox-protection"],
      ownerReferences: [poolOwnerReference(pool(1))],
      ...(o.terminating ? { deletionTimestamp: NOW } : {}),
    },
    spec: { containers: [{ name: "main", image: "idle:1" }] },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: o.ready === false ? "False" : "True" }],
    },
  };
}
const pods = (prefix: string, n: number, o: PodOpts = {}, from = 0) =>
  Array.from({ length: n }, (_, i) => pod(`${prefix}-${from + i}`, o));

describe("podRevision", () => {
  it("is 10 hex digits of the SHA-256 of what the in-place swap cannot change", () => {
    expect(NEW).toMatch(/^[0-9a-f]{10}$/);
    expect(OLD).not.toBe(NEW);
    expect(podRevision(newPool(1))).toBe(NEW);
  });

  it.each<[string, Spec]>([
    [
      "the first container's image",
      { template: { spec: { containers: [{ name: "main", image: "base:2" }] } } },
    ],
    ["the idle image", { idleImage: "idle:2" }],
    ["the image policy", { podCreationImagePolicy: "PoolDefaultImage" }],
    ["replicas", { replicas: 9 }],
    ["timeouts", { defaultIdleTimeout: "5m", defaultStartupTimeout: "90s" }],
    ["runtimes", { runtimes: [{ name: "e2b", port: 49983, protocol: "TCP" }] }],
    ["the rollout's maxSurge", { rollout: { maxSurge: 3 } }],
  ])("stays when only %s changes (no new pod needed)", (_what, change) => {
    const base = pool(2, { template: { spec: { containers: [{ name: "main", image: "base:1" }] } } });
    const changed = { ...base, spec: { ...base.spec, ...change } } as SandboxPool;
    expect(podRevision(changed)).toBe(podRevision(base));
  });

  it("ignores every container's image, sidecars too, and key order", () => {
    const a = pool(1, {
      template: {
        spec: {
          containers: [
            { name: "main", image: "a:1", args: ["x"] },
            { name: "s", image: "s:1" },
          ],
        },
      },
    });
    const b = pool(1, {
      template: {
        spec: {
          containers: [
            { args: ["x"], image: "a:2", name: "main" },
            { image: "s:9", name: "s" },
          ],
        },
      },
    });
    expect(podRevision(b)).toBe(podRevision(a));
  });

  it.each<[string, (spec: Record<string, unknown>) => void]>([
    [
      "resources",
      (s) => ((s.containers as Record<string, unknown>[])[0]!.resources = { requests: { cpu: "1" } }),
    ],
    [
      "an env var",
      (s) => ((s.containers as Record<string, unknown>[])[0]!.env = [{ name: "X", value: "1" }]),
    ],
    ["a command", (s) => ((s.containers as Record<string, unknown>[])[0]!.command = ["/bin/run"])],
    ["an init container's image", (s) => (s.initContainers = [{ name: "init", image: "init:2" }])],
    ["the node selector", (s) => (s.nodeSelector = { pool: "gpu" })],
    ["pull secrets", (s) => (s.imagePullSecrets = [{ name: "ips-env" }])],
  ])("changes with %s (only a new pod gets it)", (_what, change) => {
    const base = pool(1);
    const changed = structuredClone(base);
    change(changed.spec.template?.spec as Record<string, unknown>);
    expect(podRevision(changed)).not.toBe(podRevision(base));
  });

  it("changes with the template's labels and annotations as rendered onto pods, not with excluded ones", () => {
    const base = pool(1);
    const relabelled = structuredClone(base);
    (relabelled.spec.template as { metadata: { labels: Record<string, string> } }).metadata.labels.tier =
      "gold";
    expect(podRevision(relabelled)).not.toBe(podRevision(base));
    const synced = structuredClone(base);
    (synced.spec.template as { metadata: { labels: Record<string, string> } }).metadata.labels[
      SYNC_SOURCE_LABEL
    ] = "global";
    expect(podRevision(synced)).toBe(podRevision(base));
  });

  it("is the label renderPod stamps on every slot", () => {
    for (const slot of [0, 7])
      expect(renderPod(newPool(3), slot).metadata?.labels?.[POD_REVISION_LABEL]).toBe(NEW);
  });

  it("hashes with SHA-256 of canonical JSON (the same digest as node:crypto)", () => {
    for (const text of ["", "abc", "a".repeat(55), "a".repeat(56), "a".repeat(64), "é€𝄞".repeat(40)])
      expect(sha256Hex(text)).toBe(createHash("sha256").update(text, "utf8").digest("hex"));
    expect(canonicalJson({ b: [{ d: 1, c: 2 }], a: undefined })).toBe('{"b":[{"c":2,"d":1}]}');
  });
});

describe("lazyPodReset", () => {
  it("is podReset computed on the first call and kept for every later one", () => {
    const pool = { ...newPool(2), status: { updateRevision: NEW, updatedReplicas: 2 } };
    const reset = lazyPodReset(pool);
    const first = reset();
    expect(first).toEqual(podReset(pool));
    expect(reset()).toBe(first);
  });
});

describe("maxSurge", () => {
  it.each<[unknown, number, number]>([
    [undefined, 6, 2],
    ["25%", 200, 50],
    ["25%", 1, 1],
    ["1%", 6, 1],
    ["150%", 2, 3],
    [3, 6, 3],
    [1, 0, 1],
    ["0%", 6, 2],
    [0, 6, 2],
    ["three", 6, 2],
  ])("%s of %s replicas is %s pod(s)", (maxSurge, replicas, want) => {
    const spec = maxSurge === undefined ? {} : { rollout: { maxSurge } };
    expect(maxSurgeOf(pool(replicas, spec as Spec))).toBe(want);
  });

  it("admission refuses what does not parse, naming the field", () => {
    expect(parseMaxSurge("25%")).toEqual({ percent: 25 });
    expect(parseMaxSurge(2)).toEqual({ count: 2 });
    for (const bad of [0, -1, 1.5, "0%", "25", "x%", ""]) expect(parseMaxSurge(bad)).toBeUndefined();
    const issues = validationIssues("SandboxPool", {
      ...pool(2, { rollout: { maxSurge: "0%" } }),
      status: {},
    });
    expect(issues).toEqual([
      {
        path: "spec.rollout.maxSurge",
        message: expect.stringMatching(/at least 1 or a percentage .* got "0%" \[rollout-max-surge\]$/),
      },
    ]);
    expect(validationIssues("SandboxPool", pool(2, { rollout: { maxSurge: "25%" } }))).toEqual([]);
  });
});

const plan = (p: SandboxPool, ps: V1Pod[]) => planScale(p, ps, NOW, POLICY, idleSince);

describe("planScale during a rollout", () => {
  it("creates the surge first, deleting nothing while no new pod is ready", () => {
    expect(plan(newPool(6), pods("web", 6, { revision: OLD }))).toMatchObject({
      create: [6, 7],
      replace: [],
    });
    const surging = [...pods("web", 6, { revision: OLD }), ...pods("web", 2, { ready: false }, 6)];
    expect(plan(newPool(6), surging)).toEqual({
      create: [],
      protect: [],
      unprotect: [],
      delete: [],
      replace: [],
    });
  });

  it("deletes an outdated idle pod only for a ready new one beyond the pool's at-rest count", () => {
    const oneReady = [...pods("web", 6, { revision: OLD }), pod("web-6"), pod("web-7", { ready: false })];
    expect(plan(newPool(6), oneReady).replace).toEqual(["web-0"]);
    const twoReady = [...pods("web", 6, { revision: OLD }), ...pods("web", 2, {}, 6)];
    expect(plan(newPool(6), twoReady).replace).toEqual(["web-0", "web-1"]);
    // Sandboxes took both new pods: at rest with 2 sandboxes the pool holds 4 idle pods, so 2 of
    // the 6 claimable outdated ones go (claims, not the rollout, took the other 2).
    const busy = [...pods("web", 6, { revision: OLD }), ...pods("web", 2, { phase: "running" }, 6)];
    expect(plan(newPool(6), busy).replace).toEqual(["web-0", "web-1"]);
    // One new pod is ready, one claimed: 7 claimable, 5 at rest: 2 go, and 5 stay claimable.
    const mixed = [...pods("web", 6, { revision: OLD }), pod("web-6"), pod("web-7", { phase: "running" })];
    expect(plan(newPool(6), mixed).replace).toEqual(["web-0", "web-1"]);
  });

  it("makes a released pod's successor at once: a pod to be replaced does not count, and holds its slot", () => {
    const replaced = pod("web-0", { revision: OLD, phase: "stopping" });
    replaced.metadata!.annotations![REPLACE_ON_RESET_ANNOTATION] = REPLACE_BY_ROLLOUT;
    expect(plan(newPool(2), [replaced, pod("web-1")]).create).toEqual([2]);
    // A stopping pod reset in place still counts.
    expect(plan(newPool(2), [pod("web-0", { phase: "stopping" }), pod("web-1")]).create).toEqual([]);
  });

  it("deletes at once outdated idle pods that cannot take a claim, and never marked or busy ones", () => {
    const ps = [
      pod("web-0", { revision: OLD, ready: false }),
      pod("web-1", { revision: OLD, phase: "running" }),
      pod("web-2", { revision: OLD, markedFor: 1 }),
      pod("web-3", { revision: OLD }),
    ];
    expect(plan(newPool(4), ps)).toMatchObject({ replace: ["web-0"], unprotect: ["web-2"], create: [4] });
  });

  it("keeps creating while busy outdated pods remain, up to the ceiling, and not past replicas of new pods", () => {
    const running = pods("web", 2, { revision: OLD, phase: "running" });
    expect(plan(newPool(6), [...running, ...pods("web", 4, {}, 2)]).create).toEqual([6, 7]);
    expect(plan(newPool(6), [...running, ...pods("web", 6, {}, 2)]).create).toEqual([]);
  });

  it("is level-based: the same read gives the same plan, and every slot stays below the ceiling", () => {
    const ps = [...pods("web", 6, { revision: OLD }), pod("web-6"), pod("web-7", { terminating: true })];
    expect(plan(newPool(6), ps)).toEqual(plan(newPool(6), ps));
    expect(plan(newPool(6), ps).create).toEqual([8]);
  });

  it("when scaling down beyond the ceiling, marks outdated pods first", () => {
    const ps = [
      pod("web-0", { idleFor: 900 }),
      pod("web-1", { idleFor: 800 }),
      pod("web-2", { revision: OLD, idleFor: 5 }),
      pod("web-3", { idleFor: 700 }),
      pod("web-4", { idleFor: 600 }),
      pod("web-5", { idleFor: 500 }),
    ];
    // replicas 2, maxSurge 1 (25% of 2, rounded up): ceiling 3, 3 to mark.
    expect(plan(newPool(2), ps).protect).toEqual(["web-2", "web-0", "web-1"]);
  });

  it("takes pods made before rollouts (no label) as current: no rollout on upgrade", () => {
    const legacy = pods("web", 3, { revision: null });
    expect(plan(newPool(3), legacy)).toEqual({
      create: [],
      protect: [],
      unprotect: [],
      delete: [],
      replace: [],
    });
    const actions = planMaterialise(newPool(3), legacy, POLICY, NOW);
    expect(actions.map((a) => a.why)).toEqual([
      "add the pod-revision label",
      "add the pod-revision label",
      "add the pod-revision label",
    ]);
    expect(actions[0]?.write).toEqual({
      op: "patch",
      patch: [
        { op: "test", path: "/metadata/resourceVersion", value: legacy[0]?.metadata?.resourceVersion },
        { op: "add", path: "/metadata/labels/agentbox.navix.sh~1pod-revision", value: NEW },
      ],
    });
  });

  it("deletes with the pod's uid and resourceVersion as preconditions", () => {
    const ps = [...pods("web", 2, { revision: OLD }), pod("web-2")];
    const deletes = planMaterialise(newPool(2), ps, POLICY, NOW).filter((a) => a.write.op === "delete");
    expect(deletes).toEqual([
      {
        target: { kind: "Pod", namespace: "ns", name: "web-0" },
        why: `rollout: delete outdated idle pod (pod revision ${OLD}, now ${NEW})`,
        write: { op: "delete", uid: "web-0-uid", resourceVersion: ps[0]?.metadata?.resourceVersion },
      },
    ]);
  });
});

/**
 * roll plays a rollout to its end against planScale: each round applies the plan (deletes go,
 * creates appear not Ready), then the kubelet makes new pods Ready and, at `release`, the busy
 * outdated pods are released (their pods replaced, as releaseIntent decides). It checks after
 * every round that claimable idle pods never fell below the count before the rollout.
 */
function roll(replicas: number, start: V1Pod[], release: number) {
  let state = start;
  const claimable = (ps: V1Pod[]) =>
    ps.filter(
      (p) =>
        p.metadata?.labels?.[SANDBOX_PHASE_LABEL] === "idle" &&
        p.status?.conditions?.[0]?.status === "True" &&
        !p.metadata?.annotations?.[SCALE_DOWN_PROTECTED_ANNOTATION],
    ).length;
  const floor = claimable(start);
  const seen: number[] = [];
  for (let round = 0; round < 40; round++) {
    const next = plan(newPool(replicas), state);
    if (round === release) state = state.filter((p) => p.metadata?.labels?.[SANDBOX_PHASE_LABEL] === "idle");
    state = state.filter((p) => !next.replace.includes(p.metadata?.name ?? ""));
    seen.push(claimable(state));
    state = [
      ...state.map((p) => ({
        ...p,
        status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
      })),
      ...next.create.map((slot) => pod(`web-${slot}`, { ready: false })),
    ];
  }
  return { state, floor, lowest: Math.min(...seen) };
}

describe("a whole rollout, played against the plan", () => {
  it("ends with every pod new, replicas pods, and claimable idle pods never below where they started", () => {
    const { state, floor, lowest } = roll(6, pods("web", 6, { revision: OLD }), -1);
    expect(lowest).toBeGreaterThanOrEqual(floor);
    expect(state).toHaveLength(6);
    expect(state.every((p) => p.metadata?.labels?.[POD_REVISION_LABEL] === NEW)).toBe(true);
  });

  it("keeps its surge while sandboxes run on outdated pods, and converges once they are released", () => {
    const start = [
      ...pods("web", 4, { revision: OLD }),
      ...pods("web", 2, { revision: OLD, phase: "running" }, 4),
    ];
    const { state, floor, lowest } = roll(6, start, 20);
    expect(floor).toBe(4);
    expect(lowest).toBeGreaterThanOrEqual(floor);
    expect(state).toHaveLength(6);
    expect(state.every((p) => p.metadata?.labels?.[POD_REVISION_LABEL] === NEW)).toBe(true);
  });
});

describe("releasing an outdated pod", () => {
  function runningPod(revision: string | null): V1Pod {
    return {
      metadata: {
        name: "web-0",
        labels: {
          [SANDBOX_PHASE_LABEL]: "running",
          ...(revision === null ? {} : { [POD_REVISION_LABEL]: revision }),
        },
        annotations: {},
      },
      spec: {
        containers: [
          { name: "main", image: "app:1" },
          { name: "proxy", image: "proxy:1" },
        ],
      },
      status: {
        phase: "Running",
        containerStatuses: ["main", "proxy"].map((name) => ({
          name,
          image: `${name === "main" ? "app" : name}:1`,
          imageID: `${name}@sha256:${"3".repeat(64)}`,
          containerID: `containerd://${name}-3`,
          ready: true,
          restartCount: 0,
          state: { running: {} },
        })),
      },
    };
  }
  /** rolled: the pool's status says `updated` of its 2 replicas stand at NEW. */
  const rolled = (updated: number, updateRevision = NEW): SandboxPool => ({
    ...newPool(2),
    status: { updateRevision, updatedReplicas: updated },
  });
  const release = (revision: string | null, pool: SandboxPool = rolled(2)) => {
    const result = releaseIntent(runningPod(revision), podReset(pool), NOW);
    if (!result.ok) throw new Error(result.reason);
    return result.intent;
  };
  const resetInPlace = (intent: ReturnType<typeof release>) => {
    expect(intent.containerImages).toMatchObject({ main: "idle:1" });
    expect(intent.setAnnotations[REPLACE_ON_RESET_ANNOTATION]).toBeUndefined();
  };

  it("replaces it instead of resetting it once replicas pods stand at the new revision: no image change, the pod is marked", () => {
    const intent = release(OLD);
    expect(intent.containerImages).toEqual({});
    expect(intent.setAnnotations[REPLACE_ON_RESET_ANNOTATION]).toBe(REPLACE_BY_ROLLOUT);
  });

  it("resets it in place while its successor would still have to start (it is replaced idle, surge-first)", () => {
    resetInPlace(release(OLD, rolled(1)));
    // A status not yet written for the new revision counts nothing.
    resetInPlace(release(OLD, rolled(2, OLD)));
    resetInPlace(release(OLD, newPool(2)));
  });

  it("resets a current pod, and one made before rollouts, in place", () => {
    for (const revision of [NEW, null]) resetInPlace(release(revision));
  });
});

describe("the outdated gauge", () => {
  it("counts pods of an older revision, terminating ones left out", () => {
    const ps = [
      pod("web-0", { revision: OLD }),
      pod("web-1", { revision: OLD, terminating: true }),
      pod("web-2"),
    ];
    expect(poolGauges(newPool(2), ps).values.outdated).toBe(1);
  });
});
