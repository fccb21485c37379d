import { EventsV1Api } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import { releaseSandbox } from "../../functions/release-sandbox.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { ApiServerUnreachable } from "../../lib/kube/errors.ts";
import type { KubeTransport } from "../../lib/kube/transport.ts";
import { kube } from "./support/kube.ts";
import { isReady, live, POOLS, phaseOf, poolObject, poolTest, reconcileUntil } from "./support/steps.ts";

// The pool lifecycle through the real steps against the real apiserver, kwok playing kubelets.

const { custom } = kube();
const t = poolTest("pool");
const { deps, pods, getPool } = t;

async function readyPool(name: string, replicas: number) {
  await custom.createNamespacedCustomObject({
    ...POOLS,
    namespace: t.ns,
    body: poolObject(t.ns, name, replicas),
  });
  return reconcileUntil(deps, t.ns, name, `${replicas} ready idle pods`, async () => {
    const ps = live(await pods(name));
    const pool = await getPool(name);
    return ps.length === replicas &&
      ps.every((p) => phaseOf(p) === "idle" && isReady(p)) &&
      pool.status?.phase === "Ready"
      ? { pods: ps, pool }
      : undefined;
  });
}

describe("pool lifecycle", () => {
  it("reaches 5 ready idle pods with deterministic names, finalizers and a Ready status", async () => {
    const { pods: ps, pool } = await readyPool("five", 5);
    expect(ps.map((p) => p.metadata?.name).sort()).toEqual([
      "five-0",
      "five-1",
      "five-2",
      "five-3",
      "five-4",
    ]);
    for (const p of ps) {
      expect(p.metadata?.finalizers).toContain("agentbox.navix.sh/sandbox-protection");
      expect(p.spec?.containers[0]?.image).toBe("registry.local/sandbox/idle:1");
      expect(p.metadata?.ownerReferences?.[0]?.name).toBe("five");
    }
    expect(pool.metadata?.finalizers).toContain("agentbox.navix.sh/finalizer");
    expect(pool.status?.phase).toBe("Ready");
    expect(pool.status?.conditions?.find((c) => c.type === "Available")?.status).toBe("True");
    // The phase transitions were reported as events.k8s.io Events on the pool.
    const events = await kube().kc.makeApiClient(EventsV1Api).listNamespacedEvent({
      namespace: t.ns,
      fieldSelector: "regarding.name=five",
    });
    const reasons = events.items.map((e) => e.reason);
    expect(reasons).toContain("ScalingUp");
    // Ready directly, or "recovered" when the pods were briefly unready idle pods (Degraded).
    expect(reasons.some((r) => r === "PoolReady" || r === "PoolRecovered")).toBe(true);
    expect(events.items.every((e) => e.reportingController === "agentbox-functions/test")).toBe(true);
    // At rest, a reconcile writes nothing.
    const report = await reconcilePool(deps, t.ns, "five");
    expect(report.steps).toEqual([]);
  });

  it("claims a pod (Idle → Starting → Running), releases it (→ Stopping → Idle) and keeps exactly one record", async () => {
    const { pods: ps, pool } = await readyPool("cycle", 1);
    const claimed = await claimSandbox(deps, ps[0]!, {
      sandboxId: "sbx-cycle-1",
      containerImages: { sandbox: "registry.local/sandbox/python:3.12" },
      team: "research",
      user: "alice",
      metadata: { run: "42" },
    });
    expect(claimed.ok).toBe(true);
    // The same (now stale) pod version cannot be claimed twice.
    const again = await claimSandbox(deps, ps[0]!, {
      sandboxId: "sbx-other",
      containerImages: { sandbox: "x:1" },
    });
    expect(again).toMatchObject({ ok: false, reason: "conflict" });

    const running = await reconcileUntil(deps, t.ns, "cycle", "sandbox running", async () => {
      const p = (await pods("cycle"))[0]!;
      return phaseOf(p) === "running" ? p : undefined;
    });
    expect(running.metadata?.annotations?.["agentbox.navix.sh/started-at"]).toBeDefined();
    expect(running.status?.containerStatuses?.[0]?.image).toBe("registry.local/sandbox/python:3.12");

    const released = await releaseSandbox(deps, pool, running, { stopReason: "Released" });
    expect(released.ok).toBe(true);
    const idle = await reconcileUntil(deps, t.ns, "cycle", "pod back to idle", async () => {
      const p = (await pods("cycle"))[0]!;
      return phaseOf(p) === "idle" && isReady(p) ? p : undefined;
    });
    expect(idle.spec?.containers[0]?.image).toBe("registry.local/sandbox/idle:1");
    expect(idle.metadata?.labels?.["agentbox.navix.sh/sandbox-id"]).toBeUndefined();
    expect(idle.metadata?.annotations?.["agentbox.navix.sh/stop-reason"]).toBeUndefined();
    const record = await deps.history.get("sbx-cycle-1");
    expect(record).toMatchObject({
      sandboxId: "sbx-cycle-1",
      poolName: "cycle",
      team: "research",
      user: "alice",
      stopReason: "Released",
      metadata: { run: "42" },
      containerImages: { sandbox: "registry.local/sandbox/python:3.12" },
    });
    expect((await deps.history.query({ pool: "cycle" })).records).toHaveLength(1);
  });

  it("a claim whose answer is lost after the apiserver applied it is still the caller's", async () => {
    const { pods: ps } = await readyPool("lost-answer", 2);
    // The real apiserver applies the claim patch; the answer never reaches the caller.
    const { kc } = kube();
    const real = nodeKubeTransport(kc);
    const losing: KubeTransport = async (req) => {
      const res = await real(req);
      if (req.method === "PATCH" && req.path.includes("/pods/")) throw new ApiServerUnreachable("timed out");
      return res;
    };
    const claimed = await claimSandbox({ ...deps, kube: new KubeClient(losing) }, ps[0]!, {
      sandboxId: "sbx-lost-answer",
      containerImages: { sandbox: "registry.local/sandbox/python:3.12" },
    });
    expect(claimed).toMatchObject({ ok: true });
    expect(claimed.ok && claimed.pod.metadata?.labels?.["agentbox.navix.sh/sandbox-id"]).toBe(
      "sbx-lost-answer",
    );
    // A claim that never reached the apiserver still fails loudly, and the pod stays idle.
    const failing: KubeTransport = async (req) => {
      if (req.method === "PATCH") throw new ApiServerUnreachable("refused");
      return real(req);
    };
    await expect(
      claimSandbox({ ...deps, kube: new KubeClient(failing) }, ps[1]!, {
        sandboxId: "sbx-never",
        containerImages: { sandbox: "registry.local/sandbox/python:3.12" },
      }),
    ).rejects.toThrow("refused");
    expect(
      phaseOf(live(await pods("lost-answer")).find((p) => p.metadata?.name === ps[1]?.metadata?.name)!),
    ).toBe("idle");
  });

  it("N concurrent reconciles on one pool never create more pods than replicas", async () => {
    await custom.createNamespacedCustomObject({
      ...POOLS,
      namespace: t.ns,
      body: poolObject(t.ns, "race", 7),
    });
    await Promise.all(Array.from({ length: 8 }, () => reconcilePool(deps, t.ns, "race")));
    await Promise.all(Array.from({ length: 8 }, () => reconcilePool(deps, t.ns, "race")));
    const ps = await pods("race");
    expect(ps.length).toBe(7);
    expect(new Set(ps.map((p) => p.metadata?.name)).size).toBe(7);
  });
});
