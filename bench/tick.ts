import { type KubeConfig, type V1Pod, Watch } from "@kubernetes/client-node";
import { claimSandbox } from "../functions/claim-sandbox.ts";
import { reconcilePool } from "../functions/runs/reconcile-pool.ts";
import { tick } from "../functions/runs/tick.ts";
import { down } from "../infra/cluster/down.ts";
import { up } from "../infra/cluster/up.ts";
import { SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import {
  benchHost,
  benchNamespace,
  benchPool,
  createPools,
  fetchJson,
  percentile,
  tickUntilSettled,
  waitFor,
} from "./support.ts";

const POOLS = Number(process.env.POOLS ?? 200);
const REPLICAS = Number(process.env.REPLICAS ?? 5);
const CLAIMS = Number(process.env.CLAIMS ?? 20);
const name = `bench-${process.pid}`;
const log = (line: string) => console.error(`[bench] ${line}`);

const state = await up({ name, nodes: 3, pullDelayMs: 0, backoffDelayMs: 1000, log });
try {
  const { kc, host } = await benchHost(state);
  const deps = host.deps;
  const ns = "bench";
  await benchNamespace(kc, ns);

  log(`creating ${POOLS} pools x ${REPLICAS} pods`);
  const t0 = Date.now();
  await createPools(kc, ns, POOLS, REPLICAS);
  // Materialise through ticks (the audit path runs alongside, as in production).
  await tickUntilSettled(deps, kc, ns, POOLS * REPLICAS, log);
  await host.reconciler.idle();
  // Two more ticks so every status reflects the settled pods.
  await tick(deps, { periodMs: 0, jitter: 0, concurrency: 16 });
  await tick(deps, { periodMs: 0, jitter: 0, concurrency: 16 });
  const materialiseS = (Date.now() - t0) / 1000;

  const ticks = [];
  for (let i = 0; i < 3; i++) ticks.push(await tick(deps, { periodMs: 0, jitter: 0, concurrency: 16 }));

  // Time from an image change (a claim) to Running through the audit path, no tick running.
  const latencies: Record<string, number[]> = {};
  for (const [delayMs, poolIndex] of [
    [0, POOLS],
    [300, POOLS + 1],
  ] as const) {
    await fetchJson(
      kc,
      "POST",
      `/apis/agents.navix.sh/v1alpha1/namespaces/${ns}/sandboxpools`,
      benchPool(ns, poolIndex, REPLICAS, { "kwok.agentbox.dev/pull-delay": `${delayMs}ms` }),
    );
    const pname = `p${poolIndex}`;
    await waitFor(async () => {
      await reconcilePool(deps, ns, pname);
      const pods = (
        await fetchJson(
          kc,
          "GET",
          `/api/v1/namespaces/${ns}/pods?labelSelector=${SANDBOX_POOL_LABEL}=${pname}`,
        )
      ).body as { items: V1Pod[] };
      return (
        pods.items.filter(
          (p) =>
            p.metadata?.labels?.[SANDBOX_PHASE_LABEL] === "idle" &&
            p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
        ).length === REPLICAS
      );
    });
    await host.reconciler.idle();
    const samples: number[] = [];
    for (let i = 0; i < CLAIMS; i++) {
      const pods = (
        await fetchJson(
          kc,
          "GET",
          `/api/v1/namespaces/${ns}/pods?labelSelector=${SANDBOX_POOL_LABEL}=${pname},${SANDBOX_PHASE_LABEL}=idle`,
        )
      ).body as { items: V1Pod[] };
      const pod = pods.items.find((p) =>
        p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
      );
      if (!pod) throw new Error("no idle pod");
      const running = watchUntilRunning(kc, ns, pod.metadata!.name!);
      const start = performance.now();
      const claim = await claimSandbox(deps, pod, {
        sandboxId: `sbx-${delayMs}-${i}`,
        containerImages: { sandbox: `registry.local/sandbox/agent:${i}` },
      });
      if (!claim.ok) throw new Error(`claim failed: ${claim.detail}`);
      await running;
      samples.push(performance.now() - start);
      // Release and let it return to idle before the next claim.
      const fresh = (await fetchJson(kc, "GET", `/api/v1/namespaces/${ns}/pods/${pod.metadata!.name}`))
        .body as V1Pod;
      const { releaseSandbox } = await import("../functions/release-sandbox.ts");
      const poolObj = await deps.kube.getPool(ns, pname);
      await releaseSandbox(deps, poolObj, fresh, { stopReason: "Released" });
      await waitFor(async () => {
        const p = (await fetchJson(kc, "GET", `/api/v1/namespaces/${ns}/pods/${pod.metadata!.name}`))
          .body as V1Pod;
        return (
          p.metadata?.labels?.[SANDBOX_PHASE_LABEL] === "idle" &&
          p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true
        );
      });
    }
    latencies[`${delayMs}`] = samples;
  }
  await host.close();

  const pct = percentile;
  console.log(`\n## Tick at ${POOLS} pools x ${REPLICAS} pods (${POOLS * REPLICAS} kwok pods)\n`);
  console.log(`Materialised from nothing to all pods idle and Ready in ${materialiseS.toFixed(1)} s.\n`);
  console.log("| tick at rest | wall time | API requests | writes |");
  console.log("| --- | --- | --- | --- |");
  for (const [i, t] of ticks.entries())
    console.log(`| ${i + 1} | ${t.ms} ms | ${t.requests} | ${t.writes} |`);
  console.log(`\n## Image change to Running through the audit path (${CLAIMS} claims each)\n`);
  // Nearest rank: p90 of 20 samples is the 19th; a "p95" of 20 is the 20th, the max itself.
  console.log("| kwok pull delay | samples | p50 | p90 | max | p50 overhead above the delay |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const [delay, xs] of Object.entries(latencies)) {
    console.log(
      `| ${delay} ms | ${xs.length} | ${pct(xs, 50).toFixed(0)} ms | ${pct(xs, 90).toFixed(0)} ms | ${Math.max(...xs).toFixed(0)} ms | ${(pct(xs, 50) - Number(delay)).toFixed(0)} ms |`,
    );
  }
} finally {
  await down(name, () => {});
}

function watchUntilRunning(kc: KubeConfig, ns: string, pod: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let req: { abort: () => void } | undefined;
    let done = false;
    new Watch(kc)
      .watch(
        `/api/v1/namespaces/${ns}/pods`,
        { fieldSelector: `metadata.name=${pod}` },
        (_type, obj: V1Pod) => {
          if (!done && obj.metadata?.labels?.[SANDBOX_PHASE_LABEL] === "running") {
            done = true;
            req?.abort();
            resolve();
          }
        },
        (err) => {
          if (!done && err && err.name !== "AbortError") reject(err);
        },
      )
      .then((r) => {
        req = r;
        if (done) r.abort();
      }, reject);
  });
}
