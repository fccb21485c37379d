// `npm run bench:exact`: RUNS bursts of exactly N creates against a pool of N idle pods (issue
// #15: N sandboxes and no 503, every run). Between runs every sandbox is released and the pool
// is waited for until all N are idle again. Reports each run's 201s, 503s (with what they said),
// the wall time to the last 201, and the bare pod PATCH rate of the same cluster for scale.
import { readFileSync } from "node:fs";
import { down } from "../infra/cluster/down.ts";
import { up } from "../infra/cluster/up.ts";
import { SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import { PodTally } from "./pod-tally.ts";
import { benchNamespacesAndHost, httpsClient, namedPool, waitFor } from "./support.ts";
import { timedBurst } from "./timed-burst.ts";

const N = Number(process.env.N ?? 1000);
const RUNS = Number(process.env.RUNS ?? 10);
/** WAIT=1: creates with `wait` (each answers once its sandbox runs), as issue #15 measured. */
const WAIT = process.env.WAIT === "1";
const NS = "bench";
const name = `bench-exact-${process.pid}`;
const log = (line: string) => console.error(`[bench] ${line}`);

const state = await up({ name, nodes: 3, pullDelayMs: 0, backoffDelayMs: 1000, log });
try {
  const { admin, host } = await benchNamespacesAndHost(state, NS);
  const { key } = await host.ask({ op: "key", team: "bench", user: "bench" });
  const api = httpsClient(`https://127.0.0.1:${state.hostPort}`, readFileSync(state.caCert), {
    "x-api-key": key,
  });
  const created = await admin(
    "POST",
    `/apis/agents.navix.sh/v1alpha1/namespaces/${NS}/sandboxpools`,
    JSON.stringify(namedPool(NS, "exact", N)),
  );
  if (created.status !== 201) throw new Error(`pool: ${created.status} ${created.body}`);
  const tally = await PodTally.start(state, NS, `${SANDBOX_POOL_LABEL}=exact`, ["exact"]);
  const allIdle = () => waitFor(async () => tally.counts().idleReady === N, 600_000);
  log(`waiting for ${N} idle pods`);
  await allIdle();
  const runs: { run: number; served: number; refused: number; lastServedMs: number; refusals: string[] }[] =
    [];
  for (let run = 1; run <= RUNS; run++) {
    await host.ask({ op: "idle" });
    const burst = await timedBurst(api, `${NS}/exact`, N, WAIT ? { wait: true } : {});
    runs.push({
      run,
      served: burst.served.length,
      refused: burst.refused.length,
      lastServedMs: burst.lastServedMs,
      refusals: burst.refusals.slice(0, 3),
    });
    log(
      `run ${run}: ${burst.served.length} created, ${burst.refused.length} 503s, last 201 at ${burst.lastServedMs.toFixed(0)} ms`,
    );
    // Release them all (100 at a time) and wait for the pool to be all idle again.
    for (let i = 0; i < burst.sandboxIds.length; i += 100)
      await Promise.all(burst.sandboxIds.slice(i, i + 100).map((id) => api("DELETE", `/v1/sandboxes/${id}`)));
    await allIdle();
  }
  await host.ask({ op: "close" });
  tally.stop();
  console.log(
    `\n## Exact-size bursts: ${RUNS} runs of ${N} creates${WAIT ? " with wait" : ""} against ${N} idle pods\n`,
  );
  console.log("| run | 201 | 503 | last 201 | first 503 says |\n| --- | --- | --- | --- | --- |");
  for (const r of runs)
    console.log(
      `| ${r.run} | ${r.served} | ${r.refused} | ${(r.lastServedMs / 1000).toFixed(2)} s | ${r.refusals[0] ?? "–"} |`,
    );
  const total = runs.reduce((a, r) => a + r.refused, 0);
  console.log(`\n503s in all ${RUNS} runs: ${total} (goal: 0).\n`);
  console.log(JSON.stringify({ n: N, wait: WAIT, runs }));
} finally {
  await down(name, () => {});
}
