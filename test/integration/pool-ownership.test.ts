import { randomBytes } from "node:crypto";
import type { V1OwnerReference, V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IdleDispatch } from "../../functions/cache/idle-dispatch.ts";
import { IdleFeed } from "../../functions/cache/idle-feed.ts";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import { reconcilePod } from "../../functions/runs/reconcile-pod.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { tick } from "../../functions/runs/tick.ts";
import { nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { CLAIM_SHARD_LABEL } from "../../lib/pool/claim-shards.ts";
import { NextReads } from "../../lib/util/shared-read.ts";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { kube, until } from "./support/kube.ts";
import { isReady, live, POOLS, phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// Issue 23: a pod belongs to a pool only when the pool controls it (ownerReference with the
// pool's uid), never by its labels alone. Forged pods, made by hand with the pool's labels, are
// never claimed, counted, changed, finalized or deleted, and each is reported once with a
// Warning. And the pods of a pool deleted before its finalizer landed are still let go: their
// records stored, their finalizers removed, by the per-pod run and by the tick.

const { core, custom } = kube();
const t = poolTest("ownership");
// The host's pieces that hand out candidates: the feed of idle pods, the waiters' dispatch.
const watch = nodeKubeWatch(kube().kc);
const feed = new IdleFeed({ ...t.deps, watch });
const { deps, app } = inProcessApi(t.deps, {
  freshLooks: new NextReads(() => Date.now()),
  idleFeed: feed,
  idle: new IdleDispatch({ ...t.deps, watch, random: Math.random }),
});
const PROTECTION = "agentbox.navix.sh/sandbox-protection";
const POOL_LABEL = "agentbox.navix.sh/sandbox-pool";
const forgedId = `forged-${randomBytes(3).toString("hex")}`;
let key = "";

const readPod = (name: string) => core.readNamespacedPod({ name, namespace: t.ns });

/** forge makes a pod by hand, with a real pod's spec (bound to its node) and the pool's labels. */
async function forge(
  like: V1Pod,
  name: string,
  o: { owners?: V1OwnerReference[]; labels?: Record<string, string>; annotations?: Record<string, string> },
): Promise<V1Pod> {
  return core.createNamespacedPod({
    namespace: t.ns,
    body: {
      metadata: {
        name,
        labels: {
          [POOL_LABEL]: "p",
          "agentbox.navix.sh/sandbox-phase": "idle",
          [CLAIM_SHARD_LABEL]: "0",
          ...o.labels,
        },
        ...(o.annotations ? { annotations: o.annotations } : {}),
        ...(o.owners ? { ownerReferences: o.owners } : {}),
        finalizers: [PROTECTION],
      },
      spec: structuredClone(like.spec) as V1Pod["spec"],
    },
  });
}

/** forgetFinalizers lets the test's forged pods go when the namespace does. */
async function forgetFinalizers(names: string[]) {
  for (const name of names)
    await core
      .patchNamespacedPod({ name, namespace: t.ns, body: [{ op: "remove", path: "/metadata/finalizers" }] })
      .catch(() => {});
}

beforeAll(async () => {
  key = await tenantKey(deps, "ownership-test");
});

describe("pods that only carry a pool's labels", () => {
  const forged = ["forged-a", "p-2", "forged-claimed"];
  afterAll(() => forgetFinalizers(forged));

  it("are never claimed, counted, changed, finalized or deleted, and each is reported once", async () => {
    await t.readyPool("p", 2);
    await t.createPool("q", 0);
    const q = (await custom.getNamespacedCustomObject({
      ...POOLS,
      namespace: t.ns,
      name: "q",
    })) as SandboxPool;
    const [real] = await t.pods("p");
    // No owner at all; a controller reference to another pool (q exists, so the garbage
    // collector leaves it) on a slot name of p; a "claimed sandbox" with a forged id.
    await forge(real as V1Pod, "forged-a", {});
    await forge(real as V1Pod, "p-2", {
      owners: [
        {
          apiVersion: "agents.navix.sh/v1alpha1",
          kind: "SandboxPool",
          name: "q",
          uid: q.metadata?.uid ?? "",
          controller: true,
        },
      ],
    });
    await forge(real as V1Pod, "forged-claimed", {
      labels: { "agentbox.navix.sh/sandbox-phase": "running", "agentbox.navix.sh/sandbox-id": forgedId },
      annotations: {
        "agentbox.navix.sh/sandbox-id": forgedId,
        "agentbox.navix.sh/claimed-at": "2026-01-01T00:00:00Z",
      },
    });
    // Every forged pod runs and is Ready before their versions are taken: kwok's own status write
    // to one still starting would look like a write of ours.
    const idleForged = await until("the forged pods run and are Ready", 30_000, async () => {
      const ps = await Promise.all(forged.map(readPod));
      return ps.every((p) => p.status?.phase === "Running" && isReady(p)) && ps.slice(0, 2);
    });
    // Each forged pod's version ("gone" once deleted): unchanged means nobody wrote it.
    const versions = async () =>
      Object.fromEntries(
        await Promise.all(
          forged.map(async (n) => [
            n,
            (await readPod(n).catch(() => undefined))?.metadata?.resourceVersion ?? "gone",
          ]),
        ),
      );
    const before = await versions();

    // Pool runs, the second an hour later (past any scale-down window): the forged pods neither
    // count as replicas nor get marked, deleted or patched.
    await reconcilePool(t.deps, t.ns, "p");
    t.deps.clock.offsetMs = 3_600_000;
    await reconcilePool(t.deps, t.ns, "p");
    t.deps.clock.offsetMs = 0;
    await reconcilePool(t.deps, t.ns, "p");
    expect(await versions()).toEqual(before);
    const status = (await t.getPool("p")).status;
    expect(status).toMatchObject({ phase: "Ready", idleReplicas: 2, runningReplicas: 0 });

    // One Warning per forged pod, however many runs saw it.
    const warnings = await core.listNamespacedEvent({ namespace: t.ns, fieldSelector: "reason=ForeignPod" });
    const named = forged.map((n) => warnings.items.filter((e) => e.message?.startsWith(`Pod ${n} `)).length);
    expect(named).toEqual([1, 1, 1]);
    expect(warnings.items.every((e) => e.type === "Warning" && e.involvedObject.name === "p")).toBe(true);

    // A third replica cannot take the slot name p-2 holds: it goes to the next free slot.
    await t.deps.kube.patchPool(t.ns, "p", [{ op: "replace", path: "/spec/replicas", value: 3 }]);
    await reconcileUntil(t.deps, t.ns, "p", "3 idle ready pods of p's own", async () => {
      const own = live(await t.pods("p")).filter((p) => p.metadata?.ownerReferences?.[0]?.name === "p");
      return own.length === 3 && own.every((p) => phaseOf(p) === "idle" && isReady(p));
    });
    const own = live(await t.pods("p")).filter((p) => p.metadata?.ownerReferences?.[0]?.name === "p");
    expect(own.map((p) => p.metadata?.name).sort()).toEqual(["p-0", "p-1", "p-3"]);

    // Creates (from lists, then from the feed) claim every real idle pod; the next one finds
    // none, and one that waits for an idle pod gets none either: never a forged pod.
    const answers: Response[] = [];
    for (let i = 0; i < 4; i++) answers.push(await postCreate(app, key, { pool: `${t.ns}/p` }));
    answers.push(await postCreate(app, key, { pool: `${t.ns}/p`, waitTimeout: 2 }));
    feed.close();
    expect(answers.map((a) => a.status)).toEqual([201, 201, 201, 503, 503]);
    const claimed = await Promise.all(
      answers.slice(0, 3).map(async (a) => ((await a.json()) as { pod: string }).pod),
    );
    expect(claimed.sort()).toEqual(["p-0", "p-1", "p-3"]);
    for (const p of idleForged) expect(phaseOf(await readPod(p.metadata?.name ?? ""))).toBe("idle");
    expect(await versions()).toEqual(before);

    // Deleting the forged sandbox: no run records it or lets it go (its finalizer is not ours to drop).
    await core.deleteNamespacedPod({ name: "forged-claimed", namespace: t.ns });
    const deleting = await readPod("forged-claimed");
    await reconcilePod(t.deps, t.ns, "p", "forged-claimed");
    await reconcilePool(t.deps, t.ns, "p");
    await tick(t.deps, { periodMs: 0, jitter: 0, concurrency: 2, namespace: t.ns });
    const after = await readPod("forged-claimed");
    expect(after.metadata?.resourceVersion).toBe(deleting.metadata?.resourceVersion);
    expect(after.metadata?.finalizers).toEqual([PROTECTION]);
    expect(await t.deps.history.get(forgedId)).toBeUndefined();
  }, 120_000);
});

describe("pods of a pool deleted before its finalizer landed", () => {
  it("are let go once deleted: the claimed one's record stored once, by the pod run and the tick", async () => {
    await t.readyPool("gone", 2);
    const [first, second] = (await t.pods("gone")).sort((a, b) =>
      (a.metadata?.name ?? "") < (b.metadata?.name ?? "") ? -1 : 1,
    );
    const sandboxId = `orphan-${randomBytes(3).toString("hex")}`;
    const image = "registry.local/sandbox/agent:1";
    const claim = await claimSandbox(t.deps, first as V1Pod, {
      sandboxId,
      containerImages: { sandbox: image },
    });
    expect(claim.ok).toBe(true);
    // The simulated kubelet reports the claimed image first: a status write it made after the
    // delete would be a writer the test did not intend, and cost the pod run's removal a conflict.
    await until("the claimed pod runs its image", 20_000, async () => {
      const pod = await readPod(first?.metadata?.name ?? "");
      return pod.status?.containerStatuses?.some((s) => s.name === "sandbox" && s.image === image && s.ready);
    });
    // The pool goes without waiting for its pods. The garbage collector deletes them in its own
    // time (it learns of new CRDs only every 30 s); the test deletes them as it would. Each stays
    // Terminating on our sandbox-protection finalizer.
    await custom.patchNamespacedCustomObject({
      ...POOLS,
      namespace: t.ns,
      name: "gone",
      body: [{ op: "remove", path: "/metadata/finalizers" }],
    });
    await custom.deleteNamespacedCustomObject({ ...POOLS, namespace: t.ns, name: "gone" });
    await until("the pool gone", 20_000, async () => !(await t.getPool("gone").catch(() => undefined)));
    for (const p of [first, second])
      await core.deleteNamespacedPod({ name: p?.metadata?.name ?? "", namespace: t.ns });
    const terminating = await t.pods("gone");
    expect(terminating.map((p) => [!!p.metadata?.deletionTimestamp, p.metadata?.finalizers])).toEqual([
      [true, [PROTECTION]],
      [true, [PROTECTION]],
    ]);
    const gone = async (name: string) =>
      (await core.listNamespacedPod({ namespace: t.ns, fieldSelector: `metadata.name=${name}` })).items
        .length === 0;

    // The per-pod run an audit event triggers: the pool is gone, the pod is let go.
    const report = await reconcilePod(t.deps, t.ns, "gone", first?.metadata?.name ?? "");
    expect(report.steps.map((s) => [s.step, s.outcomes.map((o) => [o.record, o.result])])).toEqual([
      ["finalize-deleted", [["inserted", "done"]]],
    ]);
    await until("the claimed pod gone", 20_000, () => gone(first?.metadata?.name ?? ""));
    // The tick lets the other one go; running it again records nothing twice.
    await tick(t.deps, { periodMs: 0, jitter: 0, concurrency: 2, namespace: t.ns });
    await until("the idle pod gone", 20_000, () => gone(second?.metadata?.name ?? ""));
    await tick(t.deps, { periodMs: 0, jitter: 0, concurrency: 2, namespace: t.ns });
    const records = (await t.deps.history.query({ pool: "gone" })).records;
    expect(records.map((r) => [r.sandboxId, r.podName])).toEqual([[sandboxId, first?.metadata?.name]]);
  }, 90_000);
});
