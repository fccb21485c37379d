import { afterAll, describe, expect, it } from "vitest";
import { PoolPodsView } from "../../functions/cache/pool-pods-view.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { RECONCILE, reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import { PoolRunVersions } from "../../lib/triggers/pool-run-versions.ts";
import { kube, recordingClient } from "./support/kube.ts";
import { poolTest } from "./support/steps.ts";

// ADR 0039: a pool's audit-triggered run plans from the host's view of the pool pods once the view
// has passed the versions the audit events reported for the pool's pods, instead of listing every
// pod of the pool. Against the apiserver: the view answers for a write only once it holds it, and
// a run given the view's pods reads the pool but lists no pod.

const { kc } = kube();
const t = poolTest("runview");
const requests: string[] = [];
const deps: HostDeps = { ...t.deps, kube: recordingClient(requests) };
let view: PoolPodsView | undefined;
afterAll(() => view?.close());

describe("a pool's run from the pool pods view", () => {
  it("waits for the view to pass the reported write, then plans from it without a list", async () => {
    const v = new PoolPodsView({ ...t.deps, watch: nodeKubeWatch(kc) }, t.ns);
    view = v;
    await t.readyPool("p", 2);
    const [first] = await t.pods("p");
    const name = first?.metadata?.name ?? "";
    // A write an audit event would report: its version is what the pool's next run must have seen.
    const touched = await t.deps.kube.patchPod(t.ns, name, [
      { op: "add", path: "/metadata/labels/test.navix.sh~1touched", value: "1" },
    ]);
    const versions = new PoolRunVersions();
    versions.note([[`${t.ns}/p/${name}`, { notOlderThan: touched.metadata?.resourceVersion }]]);
    const wanted = versions.take(`${t.ns}/p`);
    expect(wanted).toBe(touched.metadata?.resourceVersion);
    expect(await v.caughtUp(wanted ?? "", 10_000)).toBe(true);
    const viewed = v.podsOf(t.ns, "p") ?? [];
    expect(viewed.find((p) => p.metadata?.name === name)?.metadata?.resourceVersion).toBe(wanted);
    // A version no write has reached yet: the view does not claim it (the run lists after the wait).
    expect(await v.caughtUp(String(BigInt(wanted ?? "0") + 10n ** 12n), 200)).toBe(false);

    const podList = `GET /api/v1/namespaces/${t.ns}/pods 200`;
    requests.length = 0;
    const fromView = await reconcilePool(deps, t.ns, "p", RECONCILE, undefined, viewed);
    expect(fromView.found).toBe(true);
    expect(requests).toContain(`GET /apis/agents.navix.sh/v1alpha1/namespaces/${t.ns}/sandboxpools/p 200`);
    expect(requests).not.toContain(podList);
    // The same run without the view lists the pool's pods.
    requests.length = 0;
    await reconcilePool(deps, t.ns, "p", RECONCILE);
    expect(requests).toContain(podList);
  }, 60_000);
});
