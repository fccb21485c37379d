// `npm run bench:claims`: claim latency, time to Running and a burst of concurrent claims, each
// next to bare apiserver writes in the same run, with the evidence of what limits them (CPU per
// process, the apiserver's own request counts, an apiserver CPU profile). See docs/benchmarks.md.
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { down } from "../infra/cluster/down.ts";
import { up } from "../infra/cluster/up.ts";
import { SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import { cpuProfile, profileSummary, requestCounts, requestTable } from "./apiserver-evidence.ts";
import {
  adminClient,
  cpuSeconds,
  cpuTable,
  forkHost,
  httpsClient,
  percentile,
  serverTiming,
  waitFor,
} from "./support.ts";
import { timedBurst } from "./timed-burst.ts";

const LATENCY = Number(process.env.LATENCY ?? 200);
const BURST = Number(process.env.BURST ?? 1000);
/** BURSTS: the sizes of the bursts of creates with `wait` (issue #15: 300 and 1,000), each until Running. */
const BURSTS = (process.env.BURSTS ?? `300,${BURST}`).split(",").map(Number);
/** DOUBLE: the pool size of the overload phase (an exact-size burst, then twice its size). */
const DOUBLE = Number(process.env.DOUBLE ?? 300);
/** TTR sequential creates with `wait` per pull delay measure the time to Running. */
const TTR = Number(process.env.TTR ?? 30);
/**
 * FAST_BURSTS: the burst sizes also run against a pool without idleImage, whose claims take the
 * one-write fast path (its idle pods already run the sandbox image, fresh since their reset).
 */
const FAST_BURSTS = (process.env.FAST_BURSTS ?? BURSTS.join(",")).split(",").filter(Boolean).map(Number);
/** Each burst's apiserver CPU profile starts PROFILE_DELAY_MS in, past the ramp-up. */
const PROFILE_DELAY_MS = 500;
const name = `bench-claims-${process.pid}`;
const log = (line: string) => console.error(`[bench] ${line}`);
const json = JSON.stringify;

interface PodItem {
  metadata?: { name?: string };
  status?: { conditions?: { type: string; status: string }[] };
}

const state = await up({ name, nodes: 3, pullDelayMs: 0, backoffDelayMs: 1000, log });
try {
  // RECONCILE=off measures the API alone: no tick, no audit-triggered reconciles in the host.
  const reconcile = process.env.RECONCILE === "off" ? "off" : "on";
  const admin = adminClient(state);
  // The profiler and the request counter get their own connections: behind a burst's queue on
  // the admin pool, the profile would start after the burst.
  const observer = adminClient(state);
  for (const ns of ["agentbox-system", "bench"])
    await admin("POST", "/api/v1/namespaces", json({ metadata: { name: ns } }));
  await waitFor(
    async () => (await admin("GET", "/api/v1/namespaces/bench/serviceaccounts/default")).status === 200,
  );
  const host = await forkHost(state, reconcile);
  const processes = [...state.processes, { name: "host (Node)", pid: host.pid }];
  const { key } = await host.ask({ op: "key", team: "bench", user: "bench" });
  // A fast pool has no idleImage: its idle pods run the sandbox image, so a claim is one write.
  const pool = (poolName: string, replicas: number, pullDelay?: string, fast = false) => ({
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxPool",
    metadata: { name: poolName, namespace: "bench" },
    spec: {
      replicas,
      ...(fast ? {} : { idleImage: "registry.local/sandbox/idle:1" }),
      template: {
        ...(pullDelay ? { metadata: { annotations: { "kwok.agentbox.dev/pull-delay": pullDelay } } } : {}),
        spec: { containers: [{ name: "sandbox", image: "registry.local/sandbox/base:1" }] },
      },
    },
  });
  // The latency pool is twice the number of claims, so it is never drained during the run; the
  // burst pool's pods take the bare pod PATCHes before the burst claims them.
  const ttr = reconcile === "off" ? 0 : TTR; // Time to Running needs the reconciles.
  const pools: (readonly [string, number, string | undefined, boolean?])[] = [
    ["lat", LATENCY * 2, undefined],
    ...BURSTS.map((n) => [`burst${n}`, n, undefined] as const),
    ...FAST_BURSTS.map((n) => [`burst${n}fast`, n, undefined, true] as const),
    // The sequential bare pod PATCHes go to a pool of their own: patching a big pool's pods would
    // make every round list that whole pool (its pool run), a cost the creates would pay too.
    ["probe", 10, undefined],
    ["exact", DOUBLE, undefined],
    ["double", DOUBLE, undefined],
    ["ttr0", ttr, undefined],
    ["ttr300", ttr, "300ms"],
    ["ttrfast", ttr, undefined, true],
  ];
  for (const [p, n, delay, fast] of pools)
    if (n > 0)
      await admin(
        "POST",
        "/apis/agents.navix.sh/v1alpha1/namespaces/bench/sandboxpools",
        json(pool(p, n, delay, fast)),
      );
  const ok = (what: string, want: number) => (r: { status: number; body: string }) => {
    if (r.status !== want) throw new Error(`${what}: ${r.status} ${r.body}`);
  };
  const idleCount = async (p: string) => {
    const selector = encodeURIComponent(`${SANDBOX_POOL_LABEL}=${p},${SANDBOX_PHASE_LABEL}=idle`);
    const res = await admin("GET", `/api/v1/namespaces/bench/pods?labelSelector=${selector}`);
    return (JSON.parse(res.body) as { items: PodItem[] }).items.filter((x) =>
      x.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    ).length;
  };
  log(`waiting for ${pools.reduce((n, p) => n + p[1], 0)} idle pods`);
  await waitFor(async () => {
    if (reconcile === "off") await host.ask({ op: "tick" }); // nothing else moves the pools
    for (const [p, n] of pools) if ((await idleCount(p)) !== n) return false;
    return true;
  }, 300_000);
  await host.ask({ op: "idle" });
  // The burst's baseline PATCHes pods of no pool: their audit events trigger no run at all, so
  // the baseline carries none of our own load.
  log(`creating ${BURST} bare pods (no pool) for the baseline burst`);
  const barePods = Array.from({ length: BURST }, (_, i) => `bare-${i}`);
  for (let i = 0; i < barePods.length; i += 100)
    await Promise.all(
      barePods.slice(i, i + 100).map(async (podName) =>
        ok(
          `bare pod ${podName}`,
          201,
        )(
          await admin(
            "POST",
            "/api/v1/namespaces/bench/pods",
            json({
              metadata: { name: podName, labels: { "bench.agentbox/bare": "true" } },
              spec: { containers: [{ name: "c", image: "registry.local/bare:1" }] },
            }),
          ),
        ),
      ),
    );

  const pct = percentile;
  const ms = (xs: number[], p: number) => `${pct(xs, p).toFixed(1)} ms`;
  const api = httpsClient(`https://127.0.0.1:${state.hostPort}`, readFileSync(state.caCert), {
    "x-api-key": key,
  });
  const mergePatch = (path: string, body: unknown) =>
    admin("PATCH", path, json(body), { "content-type": "application/merge-patch+json" });
  const cm = await admin(
    "POST",
    "/api/v1/namespaces/bench/configmaps",
    json({ metadata: { name: "probe" } }),
  );
  ok("configmap", 201)(cm);
  const podsOf = async (p: string) =>
    (
      JSON.parse(
        (
          await admin(
            "GET",
            `/api/v1/namespaces/bench/pods?labelSelector=${encodeURIComponent(`${SANDBOX_POOL_LABEL}=${p}`)}`,
          )
        ).body,
      ) as { items: PodItem[] }
    ).items.map((x) => x.metadata?.name ?? "");
  const probePods = await podsOf("probe");

  // Latency: the three round trips interleaved, so each sees the same machine.
  log(`latency: ${LATENCY} rounds of ConfigMap PATCH, pod PATCH, create`);
  await host.ask({ op: "loop" });
  const times = { cm: [] as number[], pod: [] as number[], claim: [] as number[] };
  /** stages are the host's own Server-Timing figures of each create. */
  const stages: Record<string, number[]> = {};
  const timed = async (xs: number[], f: () => Promise<void>) => {
    const t = performance.now();
    await f();
    xs.push(performance.now() - t);
  };
  for (let i = 0; i < LATENCY; i++) {
    await timed(times.cm, async () =>
      ok(
        "configmap patch",
        200,
      )(
        await mergePatch("/api/v1/namespaces/bench/configmaps/probe", {
          metadata: { annotations: { n: String(i) } },
        }),
      ),
    );
    await timed(times.pod, async () =>
      ok(
        "pod patch",
        200,
      )(
        await mergePatch(`/api/v1/namespaces/bench/pods/${probePods[i % probePods.length]}`, {
          metadata: { annotations: { n: String(i) } },
        }),
      ),
    );
    await timed(times.claim, async () => {
      const res = await api("POST", "/v1/sandboxes", json({ pool: "bench/lat" }));
      ok(`claim ${i}`, 201)(res);
      for (const [stage, ms] of Object.entries(serverTiming(res)))
        stages[stage] = [...(stages[stage] ?? []), ms];
    });
  }

  const latencyLoop = await host.ask({ op: "loop" });
  // Time to Running: create with `wait` (201 once Running), kwok pull delay 0 and 300 ms (swap
  // pools: the claim changes the image) and the fast path (the image stays); what is above the
  // delay is the control plane's.
  log("time to Running");
  const ttrTimes: Record<string, number[]> = { ttr0: [], ttr300: [], ttrfast: [] };
  const ttrStages: Record<string, Record<string, number[]>> = {};
  // Round by round, so the swap and the fast path see the same machine.
  for (let i = 0; i < ttr; i++) {
    for (const p of ["ttr0", "ttr300", "ttrfast"] as const) {
      await timed(ttrTimes[p] ?? [], async () => {
        const res = await api(
          "POST",
          "/v1/sandboxes",
          json({ pool: `bench/${p}`, wait: true, startupTimeout: 30 }),
        );
        ok(`time to running ${p} ${i}`, 201)(res);
        const stages = ttrStages[p] ?? {};
        ttrStages[p] = stages;
        for (const [stage, ms] of Object.entries(serverTiming(res)))
          stages[stage] = [...(stages[stage] ?? []), ms];
      });
    }
  }
  await host.ask({ op: "idle" });

  /** burst runs one concurrent phase and records its wall time, CPU, requests and profile. */
  const burst = async <T>(label: string, n: number, profileSeconds: number, run: () => Promise<T>) => {
    const profile = join(tmpdir(), `${name}-${label.replaceAll(" ", "-")}.pprof`);
    const counts0 = await requestCounts(observer);
    const cpu0 = cpuSeconds(processes, "load generator");
    const t0 = performance.now();
    const profiled = new Promise((r) => setTimeout(r, PROFILE_DELAY_MS)).then(() =>
      cpuProfile(observer, profileSeconds, profile),
    );
    const result = await run();
    const seconds = (performance.now() - t0) / 1000;
    const cpu1 = cpuSeconds(processes, "load generator");
    const cpu = cpuTable(`${label}: process`, cpu0, cpu1, seconds);
    const used = Object.fromEntries(Object.entries(cpu1).map(([k, v]) => [k, v - (cpu0[k] ?? 0)]));
    const requests = requestTable(`${label}: apiserver requests`, counts0, await requestCounts(observer), n);
    await profiled;
    return { result, seconds, cpu, cpuSeconds: used, requests, profile, summary: profileSummary(profile) };
  };
  log(`burst: ${barePods.length} concurrent bare pod PATCHes`);
  const raw = await burst("raw PATCH burst", barePods.length, 3, () =>
    Promise.all(
      barePods.map(async (p) =>
        ok(
          `bare patch ${p}`,
          200,
        )(
          await mergePatch(`/api/v1/namespaces/bench/pods/${p}`, {
            metadata: { annotations: { probe: "1" } },
          }),
        ),
      ),
    ),
  );
  // What users feel: sandboxes Running. A create with `wait` answers once its sandbox runs, so
  // each burst lasts until its last sandbox is Running, and the CPU is what bringing them there cost.
  const bursts: ({ n: number; fast: boolean } & Awaited<
    ReturnType<typeof burst<Awaited<ReturnType<typeof timedBurst>>>>
  >)[] = [];
  // Each size against the swap pool, then against the fast-path pool of the same size.
  for (const n of BURSTS) {
    for (const fast of FAST_BURSTS.includes(n) ? [false, true] : [false]) {
      const kind = fast ? " (fast path)" : "";
      log(`burst: ${n} concurrent creates with wait${kind}`);
      await host.ask({ op: "idle" });
      const b = await burst(`burst of ${n} with wait${kind}`, n, n >= 1000 ? 8 : 3, () =>
        timedBurst(api, `bench/burst${n}${fast ? "fast" : ""}`, n, { wait: true }),
      );
      bursts.push({ n, fast, ...b });
    }
  }
  /** brief is a burst's record without its sandbox ids. */
  const brief = ({ sandboxIds: _, ...rest }: Awaited<ReturnType<typeof timedBurst>>) => rest;
  // Overload: an exact-size burst, then twice the pool's size against a pool as large.
  log(`overload: ${DOUBLE} creates against ${DOUBLE} idle pods, then ${2 * DOUBLE} against ${DOUBLE}`);
  const exact = await timedBurst(api, "bench/exact", DOUBLE);
  const double = await timedBurst(api, "bench/double", 2 * DOUBLE);
  await host.ask({ op: "close" });

  console.log(
    `\n## Claims (${LATENCY} sequential rounds, then bursts of ${BURSTS.join(" and ")} with wait; reconciles ${reconcile})\n`,
  );
  console.log("| round trip | p50 | p99 | max |");
  console.log("| --- | --- | --- | --- |");
  for (const [what, xs] of [
    ["bare merge-PATCH of a ConfigMap annotation", times.cm],
    ["bare merge-PATCH of a pod annotation", times.pod],
    ["POST /v1/sandboxes → 201", times.claim],
  ] as const)
    console.log(`| ${what} | ${ms(xs, 50)} | ${ms(xs, 99)} | ${Math.max(...xs).toFixed(1)} ms |`);
  console.log(
    `\nThe host's Server-Timing of the same creates, p50: ${Object.entries(stages)
      .map(([k, xs]) => `${k} ${ms(xs, 50)}`)
      .join(", ")} (key and target from the request's start, run alongside; create after the key).`,
  );
  console.log(
    `The host's event loop during those rounds: delay p50 ${latencyLoop.p50} ms, p99 ${latencyLoop.p99} ms, max ${latencyLoop.max} ms.`,
  );
  const ratio = (base: number[]) => (pct(times.claim, 50) / pct(base, 50)).toFixed(2);
  console.log(
    `\np50 ratio of the create to the ConfigMap PATCH: ${ratio(times.cm)}, to the pod PATCH: ${ratio(times.pod)}\n`,
  );
  if (ttr > 0) {
    console.log(
      "| create with wait → Running | n | p50 | p99 | p50 above the pull delay | host's Server-Timing, p50 each |",
    );
    console.log("| --- | --- | --- | --- | --- | --- |");
    for (const [p, delay, label] of [
      ["ttr0", 0, "swap, pull delay 0 ms"],
      ["ttr300", 300, "swap, pull delay 300 ms"],
      ["ttrfast", 0, "fast path (no idle image: one write, no restart)"],
    ] as const) {
      const xs = ttrTimes[p] ?? [];
      const stages = Object.entries(ttrStages[p] ?? {}).map(([k, v]) => `${k} ${ms(v, 50)}`);
      console.log(
        `| ${label} | ${xs.length} | ${ms(xs, 50)} | ${ms(xs, 99)} | ${(pct(xs, 50) - delay).toFixed(1)} ms | ${stages.join(", ")} |`,
      );
    }
    console.log("");
  }
  const barePerSecond = barePods.length / raw.seconds;
  console.log(
    "| burst with wait, until Running | creates | Running | 503 | Running per second | ÷ bare PATCH/s | p50 / p99 to Running | apiserver CPU per sandbox | host CPU per sandbox |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  const perSandbox = (b: (typeof bursts)[number], process: string) =>
    `${((1000 * (b.cpuSeconds[process] ?? 0)) / Math.max(1, b.result.served.length)).toFixed(1)} ms`;
  for (const b of bursts)
    console.log(
      `| ${b.n}${b.fast ? ", fast path" : ", swap"} | ${b.n} | ${b.result.served.length} | ${b.result.refused.length} | ${b.result.servedPerSecond.toFixed(0)} (last ${(b.result.lastServedMs / 1000).toFixed(2)} s in) | ${(b.result.servedPerSecond / barePerSecond).toFixed(3)} | ${(pct(b.result.served, 50) / 1000).toFixed(2)} / ${(pct(b.result.served, 99) / 1000).toFixed(2)} s | ${perSandbox(b, "kube-apiserver")} | ${perSandbox(b, "host (Node)")} |`,
    );
  console.log(
    `| bare pod merge-PATCHes (pods of no pool), for scale | ${barePods.length} | | | ${barePerSecond.toFixed(0)} PATCH/s (${raw.seconds.toFixed(2)} s) | 1 | | | |`,
  );
  console.log(
    `\n| overload, pool of ${DOUBLE} | creates | 201 | 503 | pool's worth served in | 201 per second | p99 of a 201 | p99 of a 503 | 503s within a 201's p99 |`,
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const [label, b] of [
    ["exact size", exact],
    ["twice the size", double],
  ] as const)
    console.log(
      `| ${label} | ${b.creates} | ${b.served.length} | ${b.refused.length} | ${(b.lastServedMs / 1000).toFixed(2)} s | ${b.servedPerSecond.toFixed(0)} | ${ms(b.served, 99)} | ${b.refused.length ? ms(b.refused, 99) : "–"} | ${b.refused.length ? `${((100 * b.refused.filter((x) => x <= pct(b.served, 99)).length) / b.refused.length).toFixed(0)} %` : "–"} |`,
    );
  console.log(
    `\nThe pool's worth at twice the size is served at ${(double.servedPerSecond / exact.servedPerSecond).toFixed(2)}× the exact-size rate (goal: ≥ 0.8×).`,
  );
  console.log(
    `\n${json({ exact: brief(exact), double: brief(double), bursts: bursts.map((b) => ({ n: b.n, fast: b.fast, ...brief(b.result), cpuSeconds: b.cpuSeconds })), barePatchesPerSecond: barePerSecond })}`,
  );
  for (const b of [...bursts, raw])
    console.log(`\n${b.cpu}\n\n${b.requests}\n\n${b.summary}\n\n(profile: ${b.profile})`);
} finally {
  await down(name, () => {});
}
