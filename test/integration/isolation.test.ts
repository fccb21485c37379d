import type { V1Pod } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { RESET_POLICY_ANNOTATION } from "../../lib/crd/keys.ts";
import { STOPPING_TIMEOUT_MS } from "../../lib/lifecycle/reset-progress.ts";
import { eventsAbout } from "./support/envs.ts";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { kube } from "./support/kube.ts";
import { isReady, phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// Issue #23, point 1: a container that served a sandbox never serves another. Two tenants take
// turns on small pools through the real API and steps; every container a sandbox ran in is
// remembered, and none may show up in a later sandbox. A pod's containers that never served
// (a new pod, or one a reset restarted) still take the same-image fast path: no restart at claim.

const t = poolTest("isolation");
const { deps, app } = inProcessApi(t.deps);
const keys: string[] = [];
const CYCLES = 3;

/** containerIds lists a pod's containers as name=containerID, in spec order. */
const containerIds = (pod: V1Pod) =>
  (pod.spec?.containers ?? []).map(
    (c) => `${c.name}=${pod.status?.containerStatuses?.find((s) => s.name === c.name)?.containerID ?? ""}`,
  );

interface Served {
  sandbox: string;
  pod: string;
  /** uid: the pod object (a replacement may take a slot name again). */
  uid: string;
  ids: string[];
  /** kept: the containers the claim did not restart (the same ids as on the idle pod). */
  kept: string[];
}

/**
 * cycle has each tenant create a sandbox in `pool` (waiting until it runs), records the
 * containers it runs in, releases both and reconciles until every pod is idle again.
 */
async function cycle(pool: string, served: Served[]): Promise<void> {
  const before = new Map((await t.pods(pool)).map((p) => [p.metadata?.name ?? "", containerIds(p)]));
  const got: { id: string; key: string }[] = [];
  for (const key of keys) {
    const res = await postCreate(app, key, { pool: `${t.ns}/${pool}`, wait: true, waitTimeout: 20 });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { sandboxId: string; pod: string; phase: string };
    expect(body.phase).toBe("running");
    const pod = (await t.pods(pool)).find((p) => p.metadata?.name === body.pod);
    if (!pod) throw new Error(`pod ${body.pod} of sandbox ${body.sandboxId} is gone`);
    const ids = containerIds(pod);
    expect(ids.every((id) => !id.endsWith("="))).toBe(true);
    const idle = before.get(body.pod) ?? [];
    served.push({
      sandbox: body.sandboxId,
      pod: body.pod,
      uid: pod.metadata?.uid ?? "",
      ids,
      kept: ids.filter((id) => idle.includes(id)),
    });
    got.push({ id: body.sandboxId, key });
  }
  for (const { id, key } of got) {
    const res = await app.request(`/v1/sandboxes/${id}`, { method: "DELETE", headers: { "x-api-key": key } });
    expect(res.status).toBe(204);
  }
  await reconcileUntil(deps, t.ns, pool, `every pod of ${pool} idle again`, async () => {
    const pods = await t.pods(pool);
    return pods.length === 2 && pods.every((p) => phaseOf(p) === "idle" && isReady(p));
  });
}

/** neverReused asserts that no container of one sandbox appears in any later sandbox. */
function neverReused(served: Served[]): void {
  served.forEach((s, i) => {
    const later = served.slice(i + 1).flatMap((l) => l.ids.map((id) => `${l.sandbox}: ${id}`));
    for (const id of s.ids) expect(later.filter((l) => l.endsWith(`: ${id}`))).toEqual([]);
  });
}

beforeAll(async () => {
  keys.push(await tenantKey(deps, "iso-a"), await tenantKey(deps, "iso-b"));
});

describe("a container never serves two sandboxes", () => {
  it("a pool without idleImage: every sandbox runs in fresh containers, each on the fast path", async () => {
    // Claims ask for the template's image, which idle pods already run: the seed's fast path.
    await t.readyPool("same", 2, { idleImage: undefined });
    const served: Served[] = [];
    for (let i = 0; i < CYCLES; i++) await cycle("same", served);
    expect(served).toHaveLength(CYCLES * keys.length);
    expect(new Set(served.map((s) => s.uid)).size).toBe(2); // pods were reused
    neverReused(served);
    // Each claim found fresh containers (a new pod, or one its reset restarted) and restarted none.
    for (const s of served) expect(s.kept).toEqual(s.ids);
  });

  it("a pool with a sidecar: the sidecar is restarted at every reset too", async () => {
    await t.readyPool("sidecar", 2, {
      template: {
        spec: {
          containers: [
            { name: "sandbox", image: "registry.local/sandbox/base:1" },
            { name: "proxy", image: "registry.local/sandbox/proxy:1" },
          ],
        },
      },
    });
    const served: Served[] = [];
    for (let i = 0; i < CYCLES; i++) await cycle("sidecar", served);
    expect(new Set(served.map((s) => s.uid)).size).toBe(2);
    neverReused(served);
    // The sandbox container is swapped from the idle image at claim; the fresh sidecar is kept.
    for (const s of served) expect(s.kept.map((id) => id.split("=")[0])).toEqual(["proxy"]);
  });

  it("a pool that resets by replacement: each released pod is recorded, deleted and replaced", async () => {
    await t.readyPool("replace", 2, { idleImage: undefined }, { [RESET_POLICY_ANNOTATION]: "Replace" });
    const served: Served[] = [];
    for (let i = 0; i < CYCLES; i++) await cycle("replace", served);
    neverReused(served);
    expect(new Set(served.map((s) => s.uid)).size).toBe(served.length); // never the same pod twice
    for (const s of served)
      expect(await t.deps.history.get(s.sandbox)).toMatchObject({
        sandboxId: s.sandbox,
        stopReason: "Released",
      });
  });

  it("a reset that cannot finish is recorded and its pod replaced after the stopping timeout", async () => {
    // Pods start on the template's image (so they get idle); the idle image never pulls.
    await t.readyPool("stuck", 2, {
      podCreationImagePolicy: "PoolDefaultImage",
      idleImage: "registry.invalid/unpullable:1",
    });
    const [key = ""] = keys;
    const res = await postCreate(app, key, { pool: `${t.ns}/stuck`, wait: true, waitTimeout: 20 });
    const { sandboxId, pod } = (await res.json()) as { sandboxId: string; pod: string };
    expect(res.status).toBe(201);
    expect(
      (await app.request(`/v1/sandboxes/${sandboxId}`, { method: "DELETE", headers: { "x-api-key": key } }))
        .status,
    ).toBe(204);
    await reconcileUntil(deps, t.ns, "stuck", "the reset stalled on the idle image", async () => {
      const stuck = (await t.pods("stuck")).find((p) => p.metadata?.name === pod);
      const waiting = stuck?.status?.containerStatuses?.[0]?.state?.waiting?.reason ?? "";
      return phaseOf(stuck ?? {}) === "stopping" && ["ErrImagePull", "ImagePullBackOff"].includes(waiting);
    });
    expect(await t.deps.history.get(sandboxId)).toBeUndefined();
    t.deps.clock.offsetMs = STOPPING_TIMEOUT_MS + 1000;
    try {
      await reconcileUntil(deps, t.ns, "stuck", "the stalled pod replaced", async () => {
        const pods = await t.pods("stuck");
        return (
          !pods.some((p) => p.metadata?.name === pod) &&
          pods.length === 2 &&
          pods.every((p) => phaseOf(p) === "idle" && isReady(p))
        );
      });
    } finally {
      t.deps.clock.offsetMs = 0;
    }
    expect(await t.deps.history.get(sandboxId)).toMatchObject({ sandboxId, stopReason: "Released" });
    const events = await eventsAbout(kube().core, t.ns, pod);
    expect(events).toContainEqual(
      expect.objectContaining({
        type: "Warning",
        reason: "ResetTimedOut",
        message: expect.stringMatching(/unpullable/),
      }),
    );
  });
});
