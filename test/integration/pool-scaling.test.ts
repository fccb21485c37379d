import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { kube, until } from "./support/kube.ts";
import { isReady, live, POOLS, phaseOf, poolObject, poolTest, reconcileUntil } from "./support/steps.ts";

// Scaling a pool up and down through the real steps; the test clock jumps over protection windows
// (a standalone pool is scaled by hand: its surplus idle pods go after the 10 s window alone).

const { custom } = kube();
const t = poolTest("scale");
const { deps, pods } = t;
const MARK = "agentbox.navix.sh/scale-down-protected";
const scale = (name: string, replicas: number) =>
  custom.patchNamespacedCustomObject({
    ...POOLS,
    namespace: t.ns,
    name,
    body: [{ op: "replace", path: "/spec/replicas", value: replicas }],
  });
const allIdleReady = (ps: V1Pod[], n: number) =>
  ps.length === n && ps.every((p) => phaseOf(p) === "idle" && isReady(p));

describe("pool scaling", () => {
  it("scales up into the free slots, and down only idle pods, after the protection window, saying what it waits for", async () => {
    await custom.createNamespacedCustomObject({
      ...POOLS,
      namespace: t.ns,
      body: poolObject(t.ns, "elastic", 2),
    });
    await reconcileUntil(deps, t.ns, "elastic", "2 idle pods", async () =>
      allIdleReady(await pods("elastic"), 2),
    );
    await scale("elastic", 4);
    const four = await reconcileUntil(deps, t.ns, "elastic", "4 idle pods", async () => {
      const ps = await pods("elastic");
      return allIdleReady(ps, 4) ? ps : undefined;
    });
    expect(four.map((p) => p.metadata?.name).sort()).toEqual([
      "elastic-0",
      "elastic-1",
      "elastic-2",
      "elastic-3",
    ]);

    // Claim one so it is running: it must survive the scale-down.
    const claimed = await claimSandbox(deps, four.find((p) => p.metadata?.name === "elastic-0")!, {
      sandboxId: "sbx-keep",
      containerImages: { sandbox: "registry.local/sandbox/agent:1" },
    });
    expect(claimed.ok).toBe(true);
    await reconcileUntil(deps, t.ns, "elastic", "claimed pod running", async () =>
      (await pods("elastic")).some((p) => p.metadata?.name === "elastic-0" && phaseOf(p) === "running"),
    );

    await scale("elastic", 2);
    // Scaled by hand: the surplus idle pods are marked at once, however briefly they were idle.
    await reconcilePool(deps, t.ns, "elastic");
    const marked = (await pods("elastic")).filter((p) => p.metadata?.annotations?.[MARK]);
    expect(marked).toHaveLength(2);
    expect(marked.every((p) => phaseOf(p) === "idle")).toBe(true);
    // Inside the window nothing is deleted, and the Scaling condition says what it waits for.
    await reconcilePool(deps, t.ns, "elastic");
    expect(live(await pods("elastic"))).toHaveLength(4);
    const waiting = (await custom.getNamespacedCustomObject({
      ...POOLS,
      namespace: t.ns,
      name: "elastic",
    })) as SandboxPool;
    expect(waiting.status?.phase).toBe("ScalingDown");
    expect(waiting.status?.conditions?.find((c) => c.type === "Scaling")?.message).toMatch(
      /^scaling down from 4 to 2 replicas \(1 running\): 2 idle pod\(s\) marked, deleted once their 10 s protection window ends \(.+\) unless claimed first$/,
    );

    deps.clock.offsetMs = 20_000; // past the 10 s protection window
    const left = await reconcileUntil(deps, t.ns, "elastic", "scaled down to 2", async () => {
      const ps = await pods("elastic");
      return ps.length === 2 ? ps : undefined;
    });
    expect(left.some((p) => p.metadata?.name === "elastic-0" && phaseOf(p) === "running")).toBe(true);
    const pool = (await custom.getNamespacedCustomObject({
      ...POOLS,
      namespace: t.ns,
      name: "elastic",
    })) as SandboxPool;
    await until("status after scale-down", 10_000, async () => {
      await reconcilePool(deps, t.ns, "elastic");
      const p = (await custom.getNamespacedCustomObject({
        ...POOLS,
        namespace: t.ns,
        name: "elastic",
      })) as SandboxPool;
      return p.status?.runningReplicas === 1 && p.status.idleReplicas === 1;
    });
    expect(pool.spec.replicas).toBe(2);
    deps.clock.offsetMs = 0;
  });

  it("a claim inside the protection window cancels that pod's deletion", async () => {
    await custom.createNamespacedCustomObject({
      ...POOLS,
      namespace: t.ns,
      body: poolObject(t.ns, "window", 2),
    });
    await reconcileUntil(deps, t.ns, "window", "2 idle pods", async () =>
      allIdleReady(await pods("window"), 2),
    );
    await scale("window", 1);
    await reconcilePool(deps, t.ns, "window");
    const marked = (await pods("window")).find((p) => p.metadata?.annotations?.[MARK]);
    expect(marked).toBeDefined();
    const claimed = await claimSandbox(deps, marked!, {
      sandboxId: "sbx-window",
      containerImages: { sandbox: "registry.local/sandbox/agent:1" },
    });
    expect(claimed.ok).toBe(true);
    if (claimed.ok) expect(claimed.pod.metadata?.annotations?.[MARK]).toBeUndefined();

    deps.clock.offsetMs = 20_000;
    // The claimed pod is never deleted; the other idle one becomes the candidate instead.
    await reconcileUntil(deps, t.ns, "window", "the other pod marked", async () =>
      (await pods("window")).some(
        (p) => p.metadata?.name !== marked!.metadata?.name && p.metadata?.annotations?.[MARK],
      ),
    );
    expect(
      (await pods("window")).find((p) => p.metadata?.name === marked!.metadata?.name)?.metadata
        ?.deletionTimestamp,
    ).toBeUndefined();
    deps.clock.offsetMs = 0;
  });
});
