import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { findSandbox } from "../../functions/api/find-sandbox.ts";
import { beginPause, pauseSandbox } from "../../functions/snapshots/pause-sandbox.ts";
import { resumeSandbox } from "../../functions/snapshots/resume-sandbox.ts";
import { sweepSnapshots } from "../../functions/snapshots/sweep-snapshots.ts";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import type { LifecycleEvent } from "../../lib/history/lifecycle-event.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { pauseSandboxes } from "./support/pause-sandboxes.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// Issue #39 on kwok: the history records each pause and each resume, read back through the host's
// GET /v1/history/{id}; and a pause whose container restarts after the commit never completes
// (the restart ends the sandbox, and its snapshot goes with every image).

const { cluster, core } = kube();
const t = tenantPool("pausehist", "research", 2);
const deps = { ...t.deps, envdPort: cluster.envdPort };
const user = `u-${randomBytes(3).toString("hex")}`;
const tenant: Tenant = { team: "research", user };
let key = "";

const { snapshotOf, carriers, ...sandboxes } = pauseSandboxes(t, cluster);

/** create makes a running sandbox of the pool through the test host's E2B API: its id. */
async function create(): Promise<string> {
  if (!key) key = await t.keyOf(user);
  return sandboxes.create(key);
}

/** host calls the test host's native API with the tenant's key. */
async function host(method: string, path: string, body?: unknown) {
  if (!key) key = await t.keyOf(user);
  return httpsRequest(`https://127.0.0.1:${cluster.hostPort}${path}`, cluster.caCert, {
    timeoutMs: 90_000,
    method,
    headers: { "content-type": "application/json", "x-api-key": key },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** pauseAndResume pauses a running sandbox, waits for its pod to be idle, and resumes it: its pod. */
async function pauseAndResume(id: string): Promise<string> {
  expect(await pauseSandbox(deps, tenant, id, { waitMs: 60_000 })).toMatchObject({ ok: true });
  await t.allIdle();
  const resumed = await resumeSandbox(deps, tenant, id, { waitSeconds: 60 });
  expect(resumed).toMatchObject({ ok: true, resumed: true });
  return resumed.ok ? (resumed.pod.metadata?.name ?? "") : "";
}

describe("the history of a paused and resumed sandbox", () => {
  it("records each pause and each resume once, in order, with the pods and the images; the end once", async () => {
    await t.allIdle();
    const id = await create();
    const first = (await findSandbox(deps, tenant, id, true))?.metadata?.name;
    // Through the host's native API: its steps write its history, which GET /v1/history/{id} reads.
    const cycle = async () => {
      const paused = await host("POST", `/v1/sandboxes/${id}/pause`);
      expect(paused.status, paused.body).toBe(200);
      await t.allIdle();
      const resumed = await host("POST", `/v1/sandboxes/${id}/resume`, { waitTimeout: 60 });
      expect(resumed.status, resumed.body).toBe(200);
      return {
        pod: (await carriers(id))[0]?.metadata?.name,
        images: (await snapshotOf(id))?.status?.images ?? {},
      };
    };
    const one = await cycle();
    const two = await cycle();
    expect(Object.values(one.images)[0]).toMatch(/:g1@sha256:/);
    expect(Object.values(two.images)[0]).toMatch(/:g2@sha256:/);
    type History = { record?: { stopReason: string }; events: LifecycleEvent[] };
    const read = async () => {
      const res = await host("GET", `/v1/history/${id}`);
      expect(res.status, res.body).toBe(200);
      return JSON.parse(res.body) as History;
    };
    const during = await read();
    expect(during.record).toBeUndefined();
    expect(during.events.map((e) => [e.kind, e.n, e.podName])).toEqual([
      ["paused", 1, first],
      ["resumed", 1, one.pod],
      ["paused", 2, one.pod],
      ["resumed", 2, two.pod],
    ]);
    expect(during.events.map((e) => e.images)).toEqual([one.images, one.images, two.images, two.images]);
    expect(during.events.every((e) => e.team === "research" && e.user === user && e.namespace === t.ns)).toBe(
      true,
    );
    expect(during.events[0]?.bytes).toBeGreaterThanOrEqual(0);
    expect((await host("DELETE", `/v1/sandboxes/${id}`)).status).toBe(204);
    const ended = await until("the terminal record", 60_000, async () => {
      const h = await read();
      return h.record ? h : undefined;
    });
    expect(ended.events).toEqual(during.events);
  }, 180_000);

  it("a resumed sandbox whose container restarts during a new pause ends: the pause never completes, nothing is left", async () => {
    await t.allIdle();
    const id = await create();
    await pauseAndResume(id);
    const g1 = (await snapshotOf(id))?.status?.images ?? {};
    const [pod] = await carriers(id);
    if (!pod) throw new Error(`no pod runs ${id}`);
    // The pod runs the first snapshot's images; a second pause commits (g2) and its caller dies.
    expect(pod.spec?.containers.map((c) => [c.name, c.image])).toEqual(Object.entries(g1));
    expect(await beginPause(deps, pod)).toEqual({ ok: true });
    const committed = await until("the second commit", 60_000, async () => {
      const s = await snapshotOf(id);
      return s?.status?.phase === SNAPSHOT_PHASE.COMMITTED ? s : undefined;
    });
    expect(Object.values(committed.status?.staleImages ?? {})).toEqual(Object.values(g1));
    // Its container restarts before the pause completes (a new container id, as the kubelet reports).
    const restarted = structuredClone(pod);
    for (const c of restarted.status?.containerStatuses ?? [])
      c.containerID = `containerd://${randomBytes(8).toString("hex")}`;
    const written = await core.replaceNamespacedPodStatus({
      name: pod.metadata?.name ?? "",
      namespace: t.ns,
      body: restarted,
    });
    const ids = (p?: V1Pod) => p?.status?.containerStatuses?.map((c) => c.containerID);
    expect(ids((await carriers(id))[0])).toEqual(ids(written));
    // A restart ends a running sandbox (its container was replaced behind its back): the host
    // releases the pod and its snapshot goes with every image, the committed g2 included; the
    // pause never completes, whichever of the sweep and the release acts first.
    await until("nothing of it left", 60_000, async () => {
      await sweepSnapshots(deps, t.ns, await t.pods());
      return !(await snapshotOf(id)) && (await carriers(id)).length === 0 ? true : undefined;
    });
    expect((await deps.history.events(id)).map((e) => [e.kind, e.n])).toEqual([
      ["paused", 1],
      ["resumed", 1],
    ]);
    await t.allIdle();
  });
});
