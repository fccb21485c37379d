import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import { releaseSandbox } from "../../functions/release-sandbox.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { kube } from "./support/kube.ts";
import { isReady, POOLS, phaseOf, poolObject, poolTest, reconcileUntil, testDeps } from "./support/steps.ts";

// Failure paths through the real steps: OOM kills, unpullable images and startup timeouts,
// external deletion of claimed pods, pool deletion, and racing reconcilers.

const { core, custom } = kube();
const t = poolTest("fail");
const { deps, pods, getPool } = t;

async function readyPool(
  name: string,
  replicas: number,
  spec: Record<string, unknown> = {},
): Promise<V1Pod[]> {
  await custom.createNamespacedCustomObject({
    ...POOLS,
    namespace: t.ns,
    body: poolObject(t.ns, name, replicas, spec),
  });
  return reconcileUntil(
    deps,
    t.ns,
    name,
    `${replicas} ready idle pods`,
    async () => {
      const ps = await pods(name);
      return ps.length === replicas && ps.every((p) => phaseOf(p) === "idle" && isReady(p)) ? ps : undefined;
    },
    60_000,
  );
}

async function runningSandbox(pool: string, pod: V1Pod, sandboxId: string): Promise<V1Pod> {
  const claimed = await claimSandbox(deps, pod, {
    sandboxId,
    containerImages: { sandbox: "registry.local/sandbox/agent:1" },
  });
  expect(claimed.ok).toBe(true);
  return reconcileUntil(deps, t.ns, pool, `${sandboxId} running`, async () => {
    const p = (await pods(pool)).find((x) => x.metadata?.name === pod.metadata?.name);
    return p && phaseOf(p) === "running" ? p : undefined;
  });
}

describe("failures", () => {
  it("an OOM kill releases the sandbox with a Failed record and puts the pod back in service", async () => {
    const [pod] = await readyPool("oom", 1);
    await runningSandbox("oom", pod!, "sbx-oom");
    await core.patchNamespacedPod({
      name: pod!.metadata!.name!,
      namespace: t.ns,
      body: [{ op: "add", path: "/metadata/annotations/kwok.agentbox.dev~1oom-kill", value: "sandbox" }],
    });
    const idle = await reconcileUntil(deps, t.ns, "oom", "pod idle again after the OOM", async () => {
      const p = (await pods("oom"))[0]!;
      return phaseOf(p) === "idle" && isReady(p) && (await deps.history.get("sbx-oom")) ? p : undefined;
    });
    expect(idle.metadata?.name).toBe(pod!.metadata?.name);
    expect(await deps.history.get("sbx-oom")).toMatchObject({
      stopReason: "Failed",
      failureReason: "OOMKilled",
      exitCode: 137,
    });
  });

  it("an unpullable image shows in the status detail, then the startup timeout records and replaces the pod", async () => {
    const [pod] = await readyPool("pull", 1, { defaultStartupTimeout: "20s" });
    const claimed = await claimSandbox(deps, pod!, {
      sandboxId: "sbx-pull",
      containerImages: { sandbox: "registry.invalid/unpullable:1" },
    });
    expect(claimed.ok).toBe(true);
    const diagnosed = await reconcileUntil(deps, t.ns, "pull", "ImagePullBackOff detail", async () => {
      const p = (await pods("pull"))[0]!;
      const detail = p.metadata?.annotations?.["agentbox.navix.sh/sandbox-status-detail"];
      return detail && JSON.parse(detail).reason === "ImagePullBackOff" ? JSON.parse(detail) : undefined;
    });
    expect(diagnosed.message).toContain("registry.invalid/unpullable:1");
    deps.clock.offsetMs = 60_000;
    await reconcileUntil(deps, t.ns, "pull", "pod replaced", async () => {
      const ps = await pods("pull");
      return (
        ps.length === 1 &&
        ps[0]!.metadata?.uid !== pod!.metadata?.uid &&
        phaseOf(ps[0]!) === "idle" &&
        isReady(ps[0]!)
      );
    });
    deps.clock.offsetMs = 0;
    expect(await deps.history.get("sbx-pull")).toMatchObject({
      stopReason: "Failed",
      failureReason: "StartupTimeout",
    });
  });

  it("keeps a record for every externally deleted claimed pod (100 of 100)", async () => {
    const ready = await readyPool("many", 100);
    const claims = await Promise.all(
      ready.map((p, i) =>
        claimSandbox(deps, p, {
          sandboxId: `sbx-del-${i}`,
          containerImages: { sandbox: "registry.local/sandbox/agent:1" },
        }),
      ),
    );
    expect(claims.every((c) => c.ok)).toBe(true);
    // kubectl delete pod, for every claimed pod.
    await Promise.all(
      ready.map((p) => core.deleteNamespacedPod({ name: p.metadata!.name!, namespace: t.ns })),
    );
    await reconcileUntil(
      deps,
      t.ns,
      "many",
      "100 records and the pods replaced",
      async () => {
        const page = await deps.history.query({ pool: "many", limit: 1000 });
        const ps = await pods("many");
        const replaced = ps.filter(
          (p) => !p.metadata?.deletionTimestamp && !ready.some((r) => r.metadata?.uid === p.metadata?.uid),
        );
        return page.records.length === 100 && replaced.length === 100;
      },
      90_000,
    );
    const ids = (await deps.history.query({ pool: "many", limit: 1000 })).records
      .map((r) => r.sandboxId)
      .sort();
    expect(ids).toEqual(Array.from({ length: 100 }, (_, i) => `sbx-del-${i}`).sort());
  });

  it("deleting the pool records claimed sandboxes, deletes every pod, then lets the pool go", async () => {
    const ps = await readyPool("doomed", 3);
    await runningSandbox("doomed", ps[0]!, "sbx-doomed");
    await custom.deleteNamespacedCustomObject({ ...POOLS, namespace: t.ns, name: "doomed" });
    await reconcileUntil(deps, t.ns, "doomed", "pool and pods gone", async () => {
      const gone = await getPool("doomed").then(
        () => false,
        () => true,
      );
      return gone && (await pods("doomed")).length === 0;
    });
    expect(await deps.history.get("sbx-doomed")).toMatchObject({ poolName: "doomed" });
  });

  it("racing reconcilers complete each transition once and write each record once", async () => {
    const ps = await readyPool("racy", 4);
    for (const [i, p] of ps.entries()) {
      const c = await claimSandbox(deps, p, {
        sandboxId: `sbx-racy-${i}`,
        containerImages: { sandbox: "registry.local/sandbox/agent:1" },
      });
      expect(c.ok).toBe(true);
    }
    const transitions: string[] = [];
    // Independent runs (own API connections) sharing one history store, as replicas share D1 or
    // concurrent runs in one host share its SQLite file.
    const others = [0, 1].map(() => ({ ...testDeps(), history: deps.history }));
    const racers = [deps, ...others];
    const running = await (async () => {
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline) {
        const reports = await Promise.all(racers.map((d) => reconcilePool(d, t.ns, "racy")));
        const done = reports.flatMap((r) =>
          r.steps
            .filter((s) => s.step === "complete-starting")
            .flatMap((s) => s.outcomes.filter((o) => o.result === "done" && o.why === "sandbox is running")),
        );
        transitions.push(...done.map((o) => o.target));
        const now = await pods("racy");
        if (now.every((p) => phaseOf(p) === "running")) return now;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error("sandboxes did not all start");
    })();
    expect(new Set(transitions).size, JSON.stringify(transitions)).toBe(transitions.length);
    expect(transitions).toHaveLength(4);
    const pool = await getPool("racy");
    for (const p of running) {
      const r = await releaseSandbox(deps, pool, p, {});
      expect(r.ok).toBe(true);
    }
    const deadline = Date.now() + 30_000;
    let inserted = 0;
    while (Date.now() < deadline) {
      const reports = await Promise.all(racers.map((d) => reconcilePool(d, t.ns, "racy")));
      inserted += reports.flatMap((r) =>
        r.steps.flatMap((s) => s.outcomes.filter((o) => o.record === "inserted")),
      ).length;
      if ((await pods("racy")).every((p) => phaseOf(p) === "idle")) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(inserted).toBe(4);
  });
});
