// `npm run bench:envs`: what Envs add to a tick. One run builds ENVS standalone pools of REPLICAS
// pods, measures the pool-only tick, then adopts every pool into a same-named Env (one member
// each) and measures the tick with the Env step beside the same tick with the Env step off,
// interleaved so both see the same machine. Figures: wall time, API requests and writes per tick
// at rest. Raw samples go to stdout as one JSON line (and to $BENCH_OUT when set).

import { writeFileSync } from "node:fs";
import type { HostDeps } from "../functions/host-deps.ts";
import { tick } from "../functions/runs/tick.ts";
import { down } from "../infra/cluster/down.ts";
import { up } from "../infra/cluster/up.ts";
import {
  benchHost,
  benchNamespace,
  createPools,
  fetchJson,
  percentile,
  tickUntilSettled,
} from "./support.ts";

const ENVS = Number(process.env.ENVS ?? 200);
const REPLICAS = Number(process.env.REPLICAS ?? 5);
const RUNS = Number(process.env.RUNS ?? 5);
const name = `bench-envs-${process.pid}`;
const log = (line: string) => console.error(`[bench] ${line}`);
const median = (xs: readonly number[]) => percentile(xs, 50);

const state = await up({ name, nodes: 3, pullDelayMs: 0, backoffDelayMs: 1000, log });
try {
  // The host runs the audit path (pools and Envs) as in production; the benchmark runs the ticks.
  const { kc, host } = await benchHost(state, { clusterId: "local" });
  const ns = "bench";
  await benchNamespace(kc, ns);
  const poolsOnly: HostDeps = { ...host.deps, clusterId: undefined };
  const withEnvs: HostDeps = { ...host.deps, clusterId: "local" };
  const once = (deps: HostDeps) => tick(deps, { namespace: ns, periodMs: 0, jitter: 0, concurrency: 16 });

  log(`creating ${ENVS} pools x ${REPLICAS} pods`);
  await createPools(kc, ns, ENVS, REPLICAS);
  await tickUntilSettled(poolsOnly, kc, ns, ENVS * REPLICAS, log);
  await host.reconciler.idle();
  const before = [];
  for (let i = 0; i < RUNS; i++) before.push(await once(poolsOnly));

  log(`adopting every pool into a same-named Env`);
  await once({ ...withEnvs, adoptPools: true });
  await tickUntilSettled(withEnvs, kc, ns, ENVS * REPLICAS, log);
  await host.reconciler.idle();
  const envs = (await fetchJson(kc, "GET", `/apis/agents.navix.sh/v1alpha1/namespaces/${ns}/sandboxenvs`))
    .body as {
    items: { status?: { conditions?: { type: string; status: string }[] } }[];
  };
  const ready = envs.items.filter((e) =>
    e.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
  );
  log(`${envs.items.length} Envs, ${ready.length} Ready`);
  const envTicks = [];
  const offTicks = [];
  for (let i = 0; i < RUNS; i++) {
    envTicks.push(await once(withEnvs));
    offTicks.push(await once(poolsOnly));
  }
  await host.close();

  const row = (what: string, ticks: { ms: number; readMs: number; requests: number; writes: number }[]) =>
    `| ${what} | ${median(ticks.map((t) => t.ms)).toFixed(0)} ms | ${median(ticks.map((t) => t.readMs)).toFixed(0)} ms | ${ticks.map((t) => t.ms).join(", ")} | ${[...new Set(ticks.map((t) => t.requests))].join("/")} | ${Math.max(...ticks.map((t) => t.writes))} |`;
  console.log(
    `\n## Tick with Envs: ${ENVS} Envs x 1 member x ${REPLICAS} pods (${ENVS * REPLICAS} kwok pods)\n`,
  );
  console.log(
    "| tick at rest | median wall time | of which reading | each run | API requests | writes (max) |",
  );
  console.log("| --- | --- | --- | --- | --- | --- |");
  console.log(row("pools only, before any Env existed", before));
  console.log(row(`pools and ${envs.items.length} Envs`, envTicks));
  console.log(row("same cluster, Env step off (interleaved)", offTicks));
  const ms = (ticks: { ms: number }[]) => median(ticks.map((t) => t.ms));
  console.log(
    `\nRatio of the median tick with Envs: ${(ms(envTicks) / ms(before)).toFixed(2)}x the pool-only tick before the Envs, ${(ms(envTicks) / ms(offTicks)).toFixed(2)}x the interleaved tick with the Env step off.`,
  );
  const raw = JSON.stringify({ envs: ENVS, replicas: REPLICAS, before, envTicks, offTicks });
  console.log(`\nraw: ${raw}`);
  if (process.env.BENCH_OUT) writeFileSync(process.env.BENCH_OUT, `${raw}\n`);
} finally {
  await down(name, () => {});
}
