// `npm run bench:churn`: sustained churn. CLIENTS agents each create a sandbox (wait until it
// runs), release it at once and create the next, on a fixed pool, for DURATION seconds; beside it,
// the same number of clients PATCH pods of no pool in a loop for as long (the bare write rate of
// the same run). Reports cycles per second, where pods spend their time (from a watch), and the
// CPU each process used. RESET=replace and IDLE_IMAGE=none choose the pool's reset and claim
// paths (ADR 0025). See docs/benchmarks.md.
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { down } from "../infra/cluster/down.ts";
import { up } from "../infra/cluster/up.ts";
import { RESET_POLICY_ANNOTATION, SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import { parseExposition } from "../lib/metrics/parse-exposition.ts";
import { cpuProfile, profileSummary, requestCounts, requestTable } from "./apiserver-evidence.ts";
import { PodTally } from "./pod-tally.ts";
import {
  adminClient,
  BENCH_METRICS_TOKEN,
  benchTenant,
  cpuSeconds,
  cpuTable,
  httpsClient,
  namedPool,
  percentile,
  waitFor,
} from "./support.ts";

const CLIENTS = Number(process.env.CLIENTS ?? 30);
const POOL = Number(process.env.POOL ?? 150);
const DURATION_S = Number(process.env.DURATION ?? 30);
const PULL_DELAY_MS = Number(process.env.PULL_DELAY_MS ?? 200);
// RESET=replace resets released pods by replacement (the pool's reset policy, ADR 0025);
// IDLE_IMAGE=none gives the pool no idleImage, so claims take the same-image fast path.
const RESET = process.env.RESET === "replace" ? "Replace" : "Restart";
const FAST_PATH = process.env.IDLE_IMAGE === "none";
const name = `bench-churn-${process.pid}`;
const NS = "bench";
const log = (line: string) => console.error(`[bench] ${line}`);
const json = JSON.stringify;

/** churnPool is the bench's pool, with the RESET policy and, unless FAST_PATH, an idle image. */
function churnPool() {
  const pool = namedPool(NS, "churn", POOL);
  const { idleImage: _, ...spec } = pool.spec;
  return {
    ...pool,
    metadata: { ...pool.metadata, annotations: { [RESET_POLICY_ANNOTATION]: RESET } },
    spec: FAST_PATH ? spec : pool.spec,
  };
}

const state = await up({ name, nodes: 3, pullDelayMs: PULL_DELAY_MS, backoffDelayMs: 1000, log });
try {
  const { admin, host, processes, api } = await benchTenant(state, NS);
  const must = (what: string, want: number, res: { status: number; body: string }) => {
    if (res.status !== want) throw new Error(`${what}: ${res.status} ${res.body.slice(0, 300)}`);
    return res;
  };
  must(
    "pool",
    201,
    await admin("POST", "/apis/agents.navix.sh/v1alpha1/namespaces/bench/sandboxpools", json(churnPool())),
  );
  const tally = await PodTally.start(state, NS, `${SANDBOX_POOL_LABEL}=churn`, ["churn"]);
  log(`waiting for ${POOL} idle pods`);
  await waitFor(async () => tally.counts().idleReady === POOL, 300_000);
  const bare = Array.from({ length: CLIENTS }, (_, i) => `bare-${i}`);
  for (const pod of bare)
    must(
      `bare pod ${pod}`,
      201,
      await admin(
        "POST",
        `/api/v1/namespaces/${NS}/pods`,
        json({
          metadata: { name: pod },
          spec: { containers: [{ name: "c", image: "registry.local/bare:1" }] },
        }),
      ),
    );
  await host.ask({ op: "idle" });

  /** loop runs one client until the deadline and counts its rounds. */
  const loop = async (until: number, round: () => Promise<void>) => {
    let n = 0;
    while (performance.now() < until) {
      await round();
      n++;
    }
    return n;
  };

  log(`bare: ${CLIENTS} clients PATCH pods of no pool for ${DURATION_S} s`);
  const bareStart = performance.now();
  const bareRounds = await Promise.all(
    bare.map((pod, i) =>
      loop(bareStart + DURATION_S * 1000, async () => {
        must(
          "bare patch",
          200,
          await admin(
            "PATCH",
            `/api/v1/namespaces/${NS}/pods/${pod}`,
            json({ metadata: { annotations: { n: String(i) } } }),
            {
              "content-type": "application/merge-patch+json",
            },
          ),
        );
      }),
    ),
  );
  const barePerSecond = bareRounds.reduce((a, b) => a + b, 0) / DURATION_S;

  log(`churn: ${CLIENTS} clients create (wait) and release on a pool of ${POOL} for ${DURATION_S} s`);
  const toRunning: number[] = [];
  const toReleased: number[] = [];
  const phaseSamples: Record<string, number>[] = [];
  const observer = adminClient(state);
  // The host's own counters (its /metrics) before and after: which transitions lost races.
  const hostMetrics = httpsClient(`https://127.0.0.1:${state.hostPort}`, readFileSync(state.caCert), {
    authorization: `Bearer ${BENCH_METRICS_TOKEN}`,
  });
  const conflicts = async () => {
    const s = parseExposition((await hostMetrics("GET", "/metrics")).body);
    const by = new Map<string, number>();
    for (const x of s.samples.filter((x) => x.name === "agentbox_apiserver_conflicts_total"))
      by.set(`${x.labels.verb} ${x.labels.resource} → ${x.labels.transition || "(other)"}`, x.value);
    return by;
  };
  const conflicts0 = await conflicts();
  const profile = join(tmpdir(), `${name}.pprof`);
  const counts0 = await requestCounts(observer);
  const cpu0 = cpuSeconds(processes, "load generator");
  const start = performance.now();
  tally.mark(start);
  // The apiserver's profile covers the middle of the churn (5 s in, for half the run).
  const profiled = new Promise((r) => setTimeout(r, 5000)).then(() =>
    cpuProfile(observer, Math.max(1, Math.floor(DURATION_S / 2)), profile),
  );
  const sampler = setInterval(() => phaseSamples.push(tally.phases()), 1000);
  const rounds = await Promise.all(
    Array.from({ length: CLIENTS }, () =>
      loop(start + DURATION_S * 1000, async () => {
        const t0 = performance.now();
        const created = must(
          "create",
          201,
          await api("POST", "/v1/sandboxes", json({ pool: `${NS}/churn`, wait: true, waitTimeout: 30 })),
        );
        toRunning.push(performance.now() - t0);
        const id = (JSON.parse(created.body) as { sandboxId: string }).sandboxId;
        const t1 = performance.now();
        must("release", 204, await api("DELETE", `/v1/sandboxes/${id}`));
        toReleased.push(performance.now() - t1);
      }),
    ),
  ).finally(() => clearInterval(sampler));
  const seconds = (performance.now() - start) / 1000;
  const cycles = rounds.reduce((a, b) => a + b, 0);
  const cpu = cpuTable("churn: process", cpu0, cpuSeconds(processes, "load generator"), seconds);
  const requests = requestTable("churn: apiserver requests", counts0, await requestCounts(observer), cycles);
  const lost = requestTable(
    "churn: our writes that lost, by transition",
    conflicts0,
    await conflicts(),
    cycles,
  );
  await profiled;
  const stays = tally.stayTimes();
  const mean = (k: string) =>
    phaseSamples.reduce((a, s) => a + (s[k] ?? 0), 0) / Math.max(1, phaseSamples.length);
  await host.ask({ op: "close" });
  tally.stop();

  console.log(
    `\n## Sustained churn: ${CLIENTS} clients on a pool of ${POOL}, pull delay ${PULL_DELAY_MS} ms, ${DURATION_S} s, reset ${RESET}, ${FAST_PATH ? "no idle image (claims on the fast path)" : "idle image (claims swap)"}\n`,
  );
  console.log("| figure | value |\n| --- | --- |");
  console.log(`| cycles per second (create → Running → release) | ${(cycles / seconds).toFixed(1)} |`);
  console.log(`| bare pod PATCH per second, same clients, same run | ${barePerSecond.toFixed(0)} |`);
  console.log(`| cycles ÷ bare PATCHes | ${(cycles / seconds / barePerSecond).toFixed(3)} |`);
  console.log(
    `| create → Running, p50 / p90 | ${percentile(toRunning, 50).toFixed(0)} / ${percentile(toRunning, 90).toFixed(0)} ms |`,
  );
  console.log(
    `| release → 204, p50 / p90 | ${percentile(toReleased, 50).toFixed(0)} / ${percentile(toReleased, 90).toFixed(0)} ms |`,
  );
  console.log(
    `| pods per phase, mean over the run | idle ${mean("idle").toFixed(0)}, idle unready ${mean("idle-unready").toFixed(0)}, starting ${mean("starting").toFixed(0)}, running ${mean("running").toFixed(0)}, stopping ${mean("stopping").toFixed(0)} |`,
  );
  console.log(
    `| time in each phase, p50 | ${Object.entries(stays)
      .map(([k, v]) => `${k} ${v.p50} ms (${v.n})`)
      .join(", ")} |`,
  );
  console.log(`\n${cpu}\n\n${requests}\n\n${lost}\n\n${profileSummary(profile)}\n\n(profile: ${profile})\n`);
  console.log(
    json({
      clients: CLIENTS,
      pool: POOL,
      pullDelayMs: PULL_DELAY_MS,
      reset: RESET,
      fastPath: FAST_PATH,
      seconds,
      cycles,
      cyclesPerSecond: cycles / seconds,
      barePerSecond,
      toRunning,
      toReleased,
      stays,
      phaseSamples,
    }),
  );
} finally {
  await down(name, () => {});
}
