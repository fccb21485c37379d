import { EventsV1Api, type V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { POD_REVISION_LABEL } from "../../lib/crd/keys.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { podRevision } from "../../lib/pool/render-pod.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { isReady, POOLS, phaseOf } from "./support/steps.ts";
import { tenantPool } from "./support/tenant-pool.ts";

// A rollout under load (ADR 0031), driven by the test host alone (its audit-triggered runs, no
// tick): a pool of 6 serves two clients that create and release sandboxes through /v1 while the
// pool's pod spec changes. A sampler lists the pool's pods from the apiserver every few tens of
// milliseconds; claimable idle pods must never fall below the lowest count the same load left
// before the change.

const { core, custom, cluster, kc } = kube();
const REPLICAS = 6;
const CLIENTS = 2;
const t = tenantPool("rollout", "rollout", REPLICAS);

function api(method: string, path: string, body?: unknown) {
  return httpsRequest(`https://127.0.0.1:${cluster.hostPort}/v1${path}`, cluster.caCert, {
    method,
    timeoutMs: 60_000,
    headers: { "x-api-key": t.key, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** claimable: an idle pod a create can take now (Ready, Running, not being deleted). */
const claimable = (p: V1Pod) =>
  phaseOf(p) === "idle" && isReady(p) && p.status?.phase === "Running" && !p.metadata?.deletionTimestamp;

/** load runs CLIENTS clients, each creating a sandbox (waiting until it runs), holding it briefly and releasing it. */
function load() {
  const created: string[] = [];
  const failed: string[] = [];
  let stopping = false;
  const client = async () => {
    while (!stopping) {
      const res = await api("POST", "/sandboxes", { pool: `${t.ns}/p`, wait: true, waitTimeout: 60 });
      if (res.status !== 201) {
        failed.push(`create ${res.status} ${res.body.slice(0, 200)}`);
        continue;
      }
      const { sandboxId } = JSON.parse(res.body) as { sandboxId: string };
      created.push(sandboxId);
      await new Promise((r) => setTimeout(r, 300)); // the agent's work
      const released = await api("DELETE", `/sandboxes/${sandboxId}`);
      if (released.status !== 204) failed.push(`release ${released.status} ${released.body.slice(0, 200)}`);
    }
  };
  const clients = Array.from({ length: CLIENTS }, client);
  return {
    created,
    failed,
    stop: async () => {
      stopping = true;
      await Promise.all(clients);
    },
  };
}

/** sampler lists the pool's pods in a loop and keeps the claimable count of every sample, per stage. */
function sampler() {
  const seen: Record<"before" | "during", number[]> = { before: [], during: [] };
  let stage: keyof typeof seen = "before";
  let running = true;
  const done = (async () => {
    while (running) {
      const { items } = await core.listNamespacedPod({
        namespace: t.ns,
        labelSelector: "agentbox.navix.sh/sandbox-pool=p",
      });
      seen[stage].push(items.filter(claimable).length);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    seen,
    rollout: () => {
      stage = "during";
    },
    stop: async () => {
      running = false;
      await done;
    },
  };
}

describe("pool rollout", () => {
  it("rolls every pod to a changed pod spec under a steady claim load, never below the claimable idle pods it had", async () => {
    await t.allIdle();
    const before = (await custom.getNamespacedCustomObject({
      ...POOLS,
      namespace: t.ns,
      name: "p",
    })) as SandboxPool;
    const old = podRevision(before);
    const samples = sampler();
    const clients = load();
    // The load settles into its steady state, and the sampler sees it for a while.
    await until("30 sandboxes and 100 samples before the change", 90_000, async () =>
      clients.created.length >= 30 && samples.seen.before.length >= 100 ? true : undefined,
    );
    samples.rollout();
    const changed = (await custom.patchNamespacedCustomObject({
      ...POOLS,
      namespace: t.ns,
      name: "p",
      body: [
        { op: "add", path: "/spec/template/spec/containers/0/env", value: [{ name: "MODE", value: "v2" }] },
      ],
    })) as SandboxPool;
    const revision = podRevision(changed);
    expect(revision).not.toBe(old);

    const settled = await until("every pod at the new revision, the rollout complete", 180_000, async () => {
      const pool = (await custom.getNamespacedCustomObject({
        ...POOLS,
        namespace: t.ns,
        name: "p",
      })) as SandboxPool;
      const { items } = await core.listNamespacedPod({
        namespace: t.ns,
        labelSelector: "agentbox.navix.sh/sandbox-pool=p",
      });
      const done =
        items.length === REPLICAS &&
        items.every(
          (p) => p.metadata?.labels?.[POD_REVISION_LABEL] === revision && !p.metadata?.deletionTimestamp,
        ) &&
        pool.status?.currentRevision === revision &&
        pool.status?.outdatedReplicas === 0 &&
        pool.status?.updatedReplicas === REPLICAS;
      return done ? { pool, items } : undefined;
    });
    await clients.stop();
    await samples.stop();

    const lowestBefore = Math.min(...samples.seen.before);
    const lowestDuring = Math.min(...samples.seen.during);
    console.error(
      `[rollout] ${clients.created.length} sandboxes; claimable idle pods: lowest ${lowestBefore} before (${samples.seen.before.length} samples), ${lowestDuring} during (${samples.seen.during.length} samples)`,
    );
    expect(clients.failed).toEqual([]);
    expect(lowestDuring).toBeGreaterThanOrEqual(lowestBefore);
    expect(settled.pool.status).toMatchObject({
      updatedReplicas: REPLICAS,
      outdatedReplicas: 0,
      updateRevision: revision,
      currentRevision: revision,
    });
    expect(settled.pool.status?.conditions?.find((c) => c.type === "Progressing")).toMatchObject({
      status: "False",
      reason: "RolloutComplete",
    });

    // Every sandbox is recorded, each once.
    const ids = [...clients.created].sort();
    const records = await until("a record of every sandbox", 60_000, async () => {
      const res = await api("GET", `/history?namespace=${t.ns}&pool=p&limit=1000`);
      const page = JSON.parse(res.body) as { records: { sandboxId: string }[] };
      return page.records.length >= ids.length ? page.records : undefined;
    });
    expect(records.map((r) => r.sandboxId).sort()).toEqual(ids);

    // One RolloutStarted and one RolloutCompleted, whichever runs saw them.
    const events = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({
      namespace: t.ns,
      fieldSelector: "regarding.name=p",
    });
    const reasons = events.items.map((e) => e.reason);
    expect(reasons.filter((r) => r === "RolloutStarted")).toHaveLength(1);
    expect(reasons.filter((r) => r === "RolloutCompleted")).toHaveLength(1);
  });
});
