import { afterAll, describe, expect, it } from "vitest";
import { PoolPodsView } from "../../functions/cache/pool-pods-view.ts";
import { type TickReport, tick } from "../../functions/runs/tick.ts";
import { nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import { kube, until } from "./support/kube.ts";
import { isReady, live, phaseOf, poolTest, runUntil } from "./support/steps.ts";

// ADR 0035: a host's tick plans from a watch-fed view of the pool pods instead of listing them
// each period. Against the apiserver: the view follows what a consistent list says (creates,
// claims' label changes, deletes), and ticks planned from it alone fill a pool, replace a pod
// deleted by hand and leave a settled pool without a write.

const { core } = kube();
const t = poolTest("tickview");
let view: PoolPodsView | undefined;
afterAll(() => view?.close());

/** viewTick is one tick over the test's namespace that takes the pods from the view only. */
const viewTick = (v: PoolPodsView): Promise<TickReport> =>
  tick(t.deps, {
    periodMs: 0,
    jitter: 0,
    concurrency: 2,
    namespace: t.ns,
    pods: { all: () => v.snapshot(), of: (ns, pool) => v.podsOf(ns, pool) },
  });

/** names is the sorted "name@resourceVersion" of pods. */
const names = (pods: { metadata?: { name?: string; resourceVersion?: string } }[]) =>
  pods.map((p) => `${p.metadata?.name}@${p.metadata?.resourceVersion}`).sort();

describe("the tick over the pool pods view", () => {
  it("fills a pool, follows a pod deleted by hand, and writes nothing once settled", async () => {
    const v = new PoolPodsView({ ...t.deps, watch: nodeKubeWatch(kube().kc) }, t.ns);
    view = v;
    await until("the view in step", 10_000, async () => v.snapshot() !== undefined);
    await t.createPool("p", 3);
    const filled = await runUntil(
      "3 idle Ready pods, from ticks planned on the view",
      () => viewTick(v),
      async () => {
        const pods = live(await t.pods("p"));
        return pods.length === 3 && pods.every((p) => phaseOf(p) === "idle" && isReady(p)) && pods;
      },
    );
    // The view holds what a consistent list says (it may be a moment behind: wait for it).
    await until("the view to hold the listed pods", 10_000, async () => {
      const listed = names(await t.pods("p"));
      return JSON.stringify(names(v.podsOf(t.ns, "p") ?? [])) === JSON.stringify(listed);
    });
    // The pods' last changes still reach the status; then the pool is settled: ticks write nothing.
    await until("a tick that writes nothing", 10_000, async () => (await viewTick(v)).writes === 0);
    const report = await viewTick(v);
    expect(report.podsFromView).toBe(true);
    expect(report.writes).toBe(0);

    // A pod deleted by hand leaves the view, and the next ticks put a new one in its place.
    const gone = filled[0]?.metadata?.name ?? "";
    await core.deleteNamespacedPod({ name: gone, namespace: t.ns });
    await runUntil(
      "the deleted pod replaced, all 3 idle and Ready again",
      () => viewTick(v),
      async () => {
        const pods = live(await t.pods("p"));
        return (
          pods.length === 3 &&
          pods.every((p) => phaseOf(p) === "idle" && isReady(p)) &&
          pods.every((p) => p.metadata?.uid !== filled[0]?.metadata?.uid)
        );
      },
    );
    await until("the view to hold the listed pods again", 10_000, async () => {
      const listed = names(await t.pods("p"));
      return JSON.stringify(names(v.podsOf(t.ns, "p") ?? [])) === JSON.stringify(listed);
    });
    await until("a tick that writes nothing", 10_000, async () => (await viewTick(v)).writes === 0);
    expect((await viewTick(v)).writes).toBe(0);
  }, 90_000);
});
