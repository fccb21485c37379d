import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { reconcilePod, runPodSteps } from "../../functions/runs/reconcile-pod.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { kube, recordingClient, watchPodUntil } from "./support/kube.ts";
import { isReady, phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// A pod run handed the pod an audit event recorded (PodTarget.reported) plans on it first and
// reads the pod only when the steps would act; it acts on that fresh read, never on the payload.

const { kc } = kube();
const t = poolTest("podrun");
const requests: string[] = [];
const deps: HostDeps = { ...t.deps, kube: recordingClient(requests) };
const POOL = "reported";

/** claimOne makes a pool of one idle pod and claims it as `sandboxId` (with `waiterUntil`, if given). */
async function claimOne(pool: string, sandboxId: string, waiterUntil?: Date) {
  await t.createPool(pool, 1);
  const [idle] = await reconcileUntil(deps, t.ns, pool, "an idle ready pod", async () => {
    const pods = await t.pods(pool);
    return pods.length === 1 && pods.every((p) => phaseOf(p) === "idle" && isReady(p)) && pods;
  });
  const claimed = await claimSandbox(deps, idle as V1Pod, {
    sandboxId,
    containerImages: { sandbox: "registry.local/sandbox/agent:1" },
    ...(waiterUntil ? { waiterUntil } : {}),
  });
  if (!claimed.ok) throw new Error(`claim failed: ${claimed.detail}`);
  return { name: idle?.metadata?.name ?? "", claimed: claimed.pod };
}

/** pulledVersion waits (a watch) for the version of the pod in which kubelet runs the sandbox image. */
const pulledVersion = (name: string) =>
  watchPodUntil(kc, t.ns, name, "the sandbox image running", (p) =>
    (p.status?.containerStatuses ?? []).some((c) => c.image?.includes("agent:1") && c.state?.running),
  );

describe("pod runs on a reported pod", () => {
  it("read nothing but the pool when the reported version needs nothing, and act on a fresh read otherwise", async () => {
    const { name, claimed } = await claimOne(POOL, "reported-1");
    const at = (pod: V1Pod) => ({ notOlderThan: pod.metadata?.resourceVersion, reported: pod });
    const podPath = `/api/v1/namespaces/${t.ns}/pods/${name}`;

    // The claim's own answer: Starting, nothing pulled yet. Nothing to do, and the pod is not read.
    requests.length = 0;
    const quiet = await reconcilePod(deps, t.ns, POOL, name, at(claimed));
    expect(quiet).toMatchObject({ found: true, steps: [] });
    expect(requests.filter((r) => r.includes(podPath))).toEqual([]);

    // kubelet has run the new image: this version asks for completing the start, so the run
    // reads the pod and completes it.
    const pulled = await pulledVersion(name);
    requests.length = 0;
    const acted = await reconcilePod(deps, t.ns, POOL, name, at(pulled));
    expect(requests).toContain(`GET ${podPath} 200`);
    expect(acted.steps.map((s) => [s.step, s.outcomes.map((o) => o.result)])).toContainEqual([
      "complete-starting",
      ["done"],
    ]);
    const running = await watchPodUntil(kc, t.ns, name, "running", (p) => phaseOf(p) === "running");

    // The same event handled again (a second host, a retry): the payload still says "complete
    // the start", but the fresh read shows it done, so nothing is written.
    requests.length = 0;
    const again = await reconcilePod(deps, t.ns, POOL, name, at(pulled));
    expect(requests).toContain(`GET ${podPath} 200`);
    expect(requests.filter((r) => r.startsWith("PATCH"))).toEqual([]);
    expect(again.steps).toEqual([]);
    expect(phaseOf(running)).toBe("running");
  });

  it("leave a start to the create that waits for it until its waiter-until, then complete it", async () => {
    const { name } = await claimOne("waited", "waited-1", new Date(Date.now() + 60_000));
    const pulled = await pulledVersion(name);
    // The reconcile runs (pool-wide and per pod) leave it: its create completes it.
    const pool = await t.getPool("waited");
    const byPool = await reconcilePool(deps, t.ns, "waited");
    const byPod = await runPodSteps(deps, pool, pulled);
    for (const report of [byPool, byPod])
      expect(report.steps.find((s) => s.step === "complete-starting")?.outcomes ?? []).toEqual([]);
    expect(phaseOf((await t.pods("waited"))[0] as V1Pod)).toBe("starting");
    // Past waiter-until (the create gone), the reconcile runs complete it.
    t.deps.clock.offsetMs = 120_000;
    try {
      const late = await reconcilePool(deps, t.ns, "waited");
      expect(late.steps.find((s) => s.step === "complete-starting")?.outcomes.map((o) => o.result)).toEqual([
        "done",
      ]);
    } finally {
      t.deps.clock.offsetMs = 0;
    }
  });

  it("the waiting create itself completes its start while waiter-until holds", async () => {
    const { name } = await claimOne("waiter", "waiter-1", new Date(Date.now() + 60_000));
    const pulled = await pulledVersion(name);
    const report = await runPodSteps(deps, await t.getPool("waiter"), pulled, true);
    expect(report.steps.find((s) => s.step === "complete-starting")?.outcomes.map((o) => o.result)).toEqual([
      "done",
    ]);
  });
});
