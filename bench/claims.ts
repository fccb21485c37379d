import { readFileSync } from "node:fs";
import { Agent, request } from "node:https";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { createApiKey } from "../functions/api/create-api-key.ts";
import { tick } from "../functions/tick.ts";
import { down } from "../infra/cluster/down.ts";
import { up } from "../infra/cluster/up.ts";
import { SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../lib/api/keys.ts";
import { benchHost, cpuSeconds, cpuTable, percentile, waitFor } from "./support.ts";

const LATENCY = Number(process.env.LATENCY ?? 200);
const BURST = Number(process.env.BURST ?? 1000);
/** TTR sequential creates with `wait` per pull delay measure the time to Running. */
const TTR = Number(process.env.TTR ?? 30);
const name = `bench-claims-${process.pid}`;
const log = (line: string) => console.error(`[bench] ${line}`);
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

const state = await up({ name, nodes: 3, pullDelayMs: 0, backoffDelayMs: 1000, log });
try {
  // RECONCILE=off measures the API alone: no tick, no audit-triggered reconciles in this process.
  const off = process.env.RECONCILE === "off";
  const { host } = await benchHost(state, {
    tickSeconds: off ? 0 : 5,
    ...(off ? { auditFilter: () => false } : {}),
  });
  const kube = host.deps.kube;
  const ca = readFileSync(state.caCert);
  const adminToken = readFileSync(join(state.dir, "admin-token"), "utf8").trim();
  const raw = (method: string, url: string, headers: Record<string, string>, body?: string) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const r = request(url, { method, ca, agent, headers }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          text += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on("error", reject);
      });
      r.on("error", reject);
      r.end(body);
    });
  const apiserver = (method: string, path: string, body?: unknown, type = "application/json") =>
    raw(
      method,
      `${state.server}${path}`,
      { authorization: `Bearer ${adminToken}`, "content-type": type },
      body === undefined ? undefined : JSON.stringify(body),
    );

  await apiserver("POST", "/api/v1/namespaces", { metadata: { name: "agentbox-system" } });
  await apiserver("POST", "/api/v1/namespaces", { metadata: { name: "bench" } });
  await waitFor(
    async () => (await apiserver("GET", "/api/v1/namespaces/bench/serviceaccounts/default")).status === 200,
  );
  const key = await createApiKey(
    { kube, apiKeys: host.api.apiKeys, now: () => new Date() },
    { team: "bench", user: "bench" },
  );
  const pool = (poolName: string, replicas: number, pullDelay?: string) => ({
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxPool",
    metadata: { name: poolName, namespace: "bench" },
    spec: {
      replicas,
      idleImage: "registry.local/sandbox/idle:1",
      template: {
        ...(pullDelay ? { metadata: { annotations: { "kwok.agentbox.dev/pull-delay": pullDelay } } } : {}),
        spec: { containers: [{ name: "sandbox", image: "registry.local/sandbox/base:1" }] },
      },
    },
  });
  // The latency pool is twice the number of claims, so it is never drained during the run.
  // Time to Running needs the reconciles (they complete the start), so not with RECONCILE=off.
  const ttr = off ? 0 : TTR;
  for (const [p, n, delay] of [
    ["lat", LATENCY * 2, undefined],
    ["burst", BURST, undefined],
    ["ttr0", ttr, undefined],
    ["ttr300", ttr, "300ms"],
  ] as const) {
    if (n > 0)
      await apiserver(
        "POST",
        "/apis/agents.navix.sh/v1alpha1/namespaces/bench/sandboxpools",
        pool(p, n, delay),
      );
  }
  log(`waiting for ${LATENCY * 2 + BURST + 2 * ttr} idle pods`);
  const idleCount = async (p: string) => {
    const res = await apiserver(
      "GET",
      `/api/v1/namespaces/bench/pods?labelSelector=${SANDBOX_POOL_LABEL}%3D${p},${SANDBOX_PHASE_LABEL}%3Didle`,
    );
    return (JSON.parse(res.body) as { items: V1Pod[] }).items.filter((x) =>
      x.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    ).length;
  };
  await waitFor(async () => {
    // With RECONCILE=off nothing else moves the pools, so the setup ticks by hand.
    if (process.env.RECONCILE === "off") await tick(host.deps, { periodMs: 0, jitter: 0, concurrency: 4 });
    return (
      (await idleCount("lat")) === LATENCY * 2 &&
      (await idleCount("burst")) === BURST &&
      (await idleCount("ttr0")) === ttr &&
      (await idleCount("ttr300")) === ttr
    );
  }, 300_000);
  await host.runner.idle();

  const pct = percentile;
  const cm = await apiserver("POST", "/api/v1/namespaces/bench/configmaps", { metadata: { name: "probe" } });
  if (cm.status >= 300) throw new Error(cm.body);
  const patchTimes: number[] = [];
  for (let i = 0; i < LATENCY; i++) {
    const t = performance.now();
    const r = await apiserver(
      "PATCH",
      "/api/v1/namespaces/bench/configmaps/probe",
      { metadata: { annotations: { n: String(i) } } },
      "application/merge-patch+json",
    );
    if (r.status !== 200) throw new Error(r.body);
    patchTimes.push(performance.now() - t);
  }
  const api = (body: unknown) =>
    raw(
      "POST",
      `https://127.0.0.1:${state.hostPort}/v1/sandboxes`,
      { "x-api-key": key, "content-type": "application/json" },
      JSON.stringify(body),
    );
  const claimTimes: number[] = [];
  for (let i = 0; i < LATENCY; i++) {
    const t = performance.now();
    const r = await api({ pool: "bench/lat" });
    if (r.status !== 201) throw new Error(`claim ${i}: ${r.status} ${r.body}`);
    claimTimes.push(performance.now() - t);
  }

  // Time to Running: create with `wait` (201 once Running), kwok pull delay 0 and 300 ms; what is
  // above the delay is the control plane's (claim, kwok's status write, the audit-driven
  // complete-starting, the watch that answers the waiter).
  const ttrTimes: Record<string, number[]> = { ttr0: [], ttr300: [] };
  for (const p of ttr > 0 ? (["ttr0", "ttr300"] as const) : []) {
    for (let i = 0; i < ttr; i++) {
      const t = performance.now();
      const r = await api({ pool: `bench/${p}`, wait: true, startupTimeout: 30 });
      if (r.status !== 201) throw new Error(`time to running ${p} ${i}: ${r.status} ${r.body}`);
      ttrTimes[p]?.push(performance.now() - t);
    }
  }

  // Raw PATCH throughput: BURST concurrent merge-patches of distinct pods' annotations.
  const burstPods = (
    JSON.parse(
      (await apiserver("GET", `/api/v1/namespaces/bench/pods?labelSelector=${SANDBOX_POOL_LABEL}%3Dburst`))
        .body,
    ) as { items: V1Pod[] }
  ).items;
  let cpu0 = cpuSeconds(state.processes);
  let t0 = performance.now();
  await Promise.all(
    burstPods.map((p) =>
      apiserver(
        "PATCH",
        `/api/v1/namespaces/bench/pods/${p.metadata?.name}`,
        { metadata: { annotations: { probe: "1" } } },
        "application/merge-patch+json",
      ),
    ),
  );
  const patchSeconds = (performance.now() - t0) / 1000;
  const patchCpu = cpuTable("raw PATCH burst: process", cpu0, cpuSeconds(state.processes), patchSeconds);

  const patchesBefore = host.api.kube.requests.PATCH;
  cpu0 = cpuSeconds(state.processes);
  t0 = performance.now();
  const results = await Promise.all(Array.from({ length: BURST }, () => api({ pool: "bench/burst" })));
  const burstSeconds = (performance.now() - t0) / 1000;
  const claimCpu = cpuTable("claim burst: process", cpu0, cpuSeconds(state.processes), burstSeconds);
  const patches = host.api.kube.requests.PATCH - patchesBefore;
  const created = results.filter((r) => r.status === 201).map((r) => JSON.parse(r.body) as { pod: string });
  const distinctPods = new Set(created.map((c) => c.pod)).size;
  const unavailable = results.filter((r) => r.status === 503).length;
  await host.close();

  console.log(`\n## Claims (${LATENCY} sequential, then ${BURST} concurrent)\n`);
  console.log("| round trip | p50 | p99 | max |");
  console.log("| --- | --- | --- | --- |");
  console.log(
    `| bare merge-PATCH (apiserver) | ${pct(patchTimes, 50).toFixed(1)} ms | ${pct(patchTimes, 99).toFixed(1)} ms | ${Math.max(...patchTimes).toFixed(1)} ms |`,
  );
  console.log(
    `| POST /v1/sandboxes → 201 | ${pct(claimTimes, 50).toFixed(1)} ms | ${pct(claimTimes, 99).toFixed(1)} ms | ${Math.max(...claimTimes).toFixed(1)} ms |`,
  );
  console.log(`\np50 ratio claim / bare PATCH: ${(pct(claimTimes, 50) / pct(patchTimes, 50)).toFixed(2)}\n`);
  if (ttr > 0) {
    console.log("| create with wait → Running | n | p50 | p99 | p50 above the pull delay |");
    console.log("| --- | --- | --- | --- | --- |");
    for (const [p, delay] of [
      ["ttr0", 0],
      ["ttr300", 300],
    ] as const) {
      const xs = ttrTimes[p] ?? [];
      console.log(
        `| pull delay ${delay} ms | ${xs.length} | ${pct(xs, 50).toFixed(1)} ms | ${pct(xs, 99).toFixed(1)} ms | ${(pct(xs, 50) - delay).toFixed(1)} ms |`,
      );
    }
    console.log("");
  }
  console.log(
    "| burst | requests | created | 503 | double claims | wall time | per second | claim patches per claim |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
  console.log(
    `| claims | ${BURST} | ${created.length} | ${unavailable} | ${created.length - distinctPods} | ${burstSeconds.toFixed(2)} s | ${(created.length / burstSeconds).toFixed(0)} | ${(patches / Math.max(1, created.length)).toFixed(2)} |`,
  );
  console.log(
    `| raw merge-PATCH | ${burstPods.length} | | | | ${patchSeconds.toFixed(2)} s | ${(burstPods.length / patchSeconds).toFixed(0)} | |`,
  );
  console.log(
    `\nWhere the CPU went (the bench process also generates the load):\n\n${claimCpu}\n\n${patchCpu}`,
  );
} finally {
  await down(name, () => {});
}
