// `npm run bench:real`: claims on real containers against what a pod-per-claim system pays. One
// cluster with the real node (kubelet, containerd, runc, CNI, a local registry) and the Node host
// in a process of its own; on the real node, round by round and in a rotating order: a claim that
// swaps (idle → sandbox-a) and its release back to Idle, a claim on the one-write fast path (the
// idle pod already runs sandbox-a) and its release, and a fresh pod of sandbox-a created through
// the apiserver (no pool, none of our load) until Ready, with the image on the node and pulled
// from the registry. Each is also timed to the first answer of envd inside the container.
// See docs/benchmarks.md.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { ensureNodeBinaries } from "../infra/cluster/binaries.ts";
import { down } from "../infra/cluster/down.ts";
import { nodeImages } from "../infra/cluster/real-node/node-images.ts";
import { up } from "../infra/cluster/up.ts";
import { imageRef } from "../infra/images/refs.ts";
import { SANDBOX_PHASE, SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import {
  type Containerd,
  envdAnswers,
  freshPod,
  isReady,
  onRealNode,
  PodWatch,
  removeImage,
  SANDBOX_RESOURCES,
} from "./real-node-pods.ts";
import { benchTenant, percentile } from "./support.ts";

/** ROUNDS measured rounds of every kind, after WARMUP unmeasured ones. */
const ROUNDS = Number(process.env.ROUNDS ?? 20);
const WARMUP = Number(process.env.WARMUP ?? 1);
/** SETTLE_MS: the pause after each step, so one step's leftovers (a pod's teardown) miss the next. */
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 1000);
const STEP_TIMEOUT_MS = 120_000;
const NS = "bench";
const IDLE = imageRef("idle");
const SANDBOX = imageRef("sandbox-a");
const name = `bench-real-${process.pid}`;
const log = (line: string) => console.error(`[bench] ${line}`);
const json = JSON.stringify;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** realPool is a pool of one pod on the real node running sandbox-a, swapping from idle if asked. */
const realPool = (poolName: string, idle: boolean) => ({
  apiVersion: "agents.navix.sh/v1alpha1",
  kind: "SandboxPool",
  metadata: { name: poolName, namespace: NS },
  spec: {
    replicas: 1,
    ...(idle ? { idleImage: IDLE } : {}),
    template: {
      spec: {
        ...onRealNode,
        containers: [{ name: "sandbox", image: SANDBOX, resources: SANDBOX_RESOURCES }],
      },
    },
  },
});

const idleAgain = (pod: V1Pod | undefined) =>
  pod?.metadata?.labels?.[SANDBOX_PHASE_LABEL] === SANDBOX_PHASE.IDLE && isReady(pod);

/** Sample is one measured step: ms to its answer, and to envd's first answer when it has one. */
interface Sample {
  ms: number;
  envdMs?: number;
  note?: string;
}
const KINDS = ["swap", "fast", "warm", "pull"] as const;
type Kind = (typeof KINDS)[number];

const state = await up({
  name,
  nodes: 1,
  pullDelayMs: 0,
  backoffDelayMs: 1000,
  realNode: nodeImages(log),
  log,
});
try {
  if (!state.realNode) throw new Error("the cluster came up without its real node");
  const containerd: Containerd = {
    ctr: join(ensureNodeBinaries(), "ctr"),
    socket: state.realNode.containerdSocket,
  };
  const { admin, host, api } = await benchTenant(state, NS);
  const kc = new KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  const pods = await PodWatch.start(kc, NS);
  const must = (what: string, want: number, res: { status: number; body: string }) => {
    if (res.status !== want) throw new Error(`${what}: ${res.status} ${res.body.slice(0, 300)}`);
    return res;
  };
  for (const [p, idle] of [
    ["swap", true],
    ["fast", false],
  ] as const)
    must(
      `pool ${p}`,
      201,
      await admin(
        "POST",
        `/apis/agents.navix.sh/v1alpha1/namespaces/${NS}/sandboxpools`,
        json(realPool(p, idle)),
      ),
    );
  const poolPod = async (p: string) => {
    let pod: string | undefined;
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    while (!pod && Date.now() < deadline) {
      const list = JSON.parse(
        (
          await admin(
            "GET",
            `/api/v1/namespaces/${NS}/pods?labelSelector=${encodeURIComponent(`${SANDBOX_POOL_LABEL}=${p}`)}`,
          )
        ).body,
      ) as { items: V1Pod[] };
      pod = list.items[0]?.metadata?.name;
      if (!pod) await pause(200);
    }
    if (!pod) throw new Error(`pool ${p} made no pod`);
    return pod;
  };
  log("waiting for the pools' pods to be idle and Ready on the real node");
  for (const p of ["swap", "fast"]) await pods.until(await poolPod(p), idleAgain, 300_000, "idle and Ready");
  await host.ask({ op: "idle" });

  /** claim creates a sandbox with wait (201 once Running), then releases it and waits for Idle. */
  const claim = async (p: "swap" | "fast"): Promise<{ claim: Sample; release: Sample }> => {
    const t0 = performance.now();
    const res = must(
      `claim ${p}`,
      201,
      await api("POST", "/v1/sandboxes", json({ pool: `${NS}/${p}`, wait: true, waitTimeout: 60 })),
    );
    const t1 = performance.now();
    const view = JSON.parse(res.body) as { sandboxId: string; pod: string; phase: string; podIP?: string };
    if (view.phase !== "running") throw new Error(`claim ${p} answered ${view.phase}, not running`);
    const envd = await envdAnswers(() => view.podIP, STEP_TIMEOUT_MS);
    const image = pods.pod(view.pod)?.status?.containerStatuses?.find((c) => c.name === "sandbox")?.image;
    await pause(SETTLE_MS);
    const r0 = performance.now();
    const idle = pods.until(view.pod, idleAgain, STEP_TIMEOUT_MS, "idle again");
    must(`release ${p}`, 204, await api("DELETE", `/v1/sandboxes/${view.sandboxId}`));
    const r1 = await idle;
    return {
      claim: { ms: t1 - t0, envdMs: envd - t0, note: image ?? "no status yet" },
      release: { ms: r1 - r0 },
    };
  };

  /** fresh creates a pod of sandbox-a on the real node until Ready, then deletes it until gone. */
  let freshCount = 0;
  const fresh = async (pull: boolean): Promise<Sample> => {
    const removed = pull ? await removeImage(containerd, SANDBOX) : [];
    if (pull && removed.length === 0) throw new Error(`${SANDBOX} was not on the node to remove`);
    const pod = `fresh-${pull ? "pull" : "warm"}-${freshCount++}`;
    const t0 = performance.now();
    const ready = pods.until(pod, isReady, STEP_TIMEOUT_MS, "Ready");
    must(
      `pod ${pod}`,
      201,
      await admin(
        "POST",
        `/api/v1/namespaces/${NS}/pods`,
        json(freshPod(pod, SANDBOX, pull ? "Always" : "IfNotPresent")),
      ),
    );
    const envd = envdAnswers(() => pods.pod(pod)?.status?.podIP, STEP_TIMEOUT_MS);
    const [readyAt, envdAt] = await Promise.all([ready, envd]);
    const events = JSON.parse(
      (
        await admin(
          "GET",
          `/api/v1/namespaces/${NS}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${pod}`)}`,
        )
      ).body,
    ) as { items: { reason?: string; message?: string }[] };
    const pulled = events.items.find((e) => e.reason === "Pulled")?.message ?? "no Pulled event yet";
    const gone = pods.until(pod, (x) => x === undefined, STEP_TIMEOUT_MS, "deleted");
    must(`delete ${pod}`, 200, await admin("DELETE", `/api/v1/namespaces/${NS}/pods/${pod}`));
    await gone;
    return { ms: readyAt - t0, envdMs: envdAt - t0, note: pulled };
  };

  const samples: Record<string, Sample[]> = {};
  const keep = (k: string, s: Sample, measured: boolean) => {
    if (measured) samples[k] = [...(samples[k] ?? []), s];
  };
  for (let round = 0; round < WARMUP + ROUNDS; round++) {
    const measured = round >= WARMUP;
    // The order rotates each round, so no kind always follows the same other kind.
    const order = KINDS.map((_, i) => KINDS[(i + round) % KINDS.length] as Kind);
    for (const kind of order) {
      if (kind === "swap" || kind === "fast") {
        const r = await claim(kind);
        keep(`claim ${kind}`, r.claim, measured);
        keep(`release ${kind}`, r.release, measured);
      } else keep(`fresh ${kind}`, await fresh(kind === "pull"), measured);
      await pause(SETTLE_MS);
    }
    log(
      `round ${round + 1}/${WARMUP + ROUNDS}${measured ? "" : " (warm-up)"}: ${Object.entries(samples)
        .map(([k, xs]) => `${k} ${xs.at(-1)?.ms.toFixed(0)} ms`)
        .join(", ")}`,
    );
  }
  pods.stop();
  // The kubelet's own word on delayed restarts (CrashLoopBackOff applies to in-place restarts too).
  const events = JSON.parse((await admin("GET", `/api/v1/namespaces/${NS}/events`)).body) as {
    items: { reason?: string; count?: number; involvedObject?: { name?: string } }[];
  };
  const backoffs = events.items
    .filter((e) => e.reason === "BackOff")
    .map((e) => `${e.involvedObject?.name}: ${e.count ?? 1}`);
  const kubeletConfig = readFileSync(join(state.realNode.dir, "kubelet.yaml"), "utf8");
  const restartPeriod = /maxContainerRestartPeriod:\s*(\S+)/.exec(kubeletConfig)?.[1] ?? "unset (300s)";
  await host.ask({ op: "close" });
  report(samples, backoffs, restartPeriod);
} finally {
  await down(name, () => {});
}

/** report prints the table, the ratios and the raw samples. */
function report(samples: Record<string, Sample[]>, backoffs: string[], restartPeriod: string) {
  const p = (xs: number[], q: number) => percentile(xs, q).toFixed(0);
  const at = (k: string, q: number, envd = false) =>
    percentile(
      (samples[k] ?? []).map((s) => (envd ? (s.envdMs ?? Number.NaN) : s.ms)),
      q,
    );
  const rows: [string, string][] = [
    ["claim → Running (201), swap: idle → sandbox-a", "claim swap"],
    ["claim → Running (201), one-write fast path", "claim fast"],
    ["release → Idle and Ready again, swap pool (back to idle)", "release swap"],
    ["release → Idle and Ready again, fast-path pool (restart)", "release fast"],
    ["fresh pod → Ready, image on the node", "fresh warm"],
    ["fresh pod → Ready, pulled from the registry", "fresh pull"],
  ];
  console.log(
    `\n## Real node: ${ROUNDS} rounds of each, interleaved (${WARMUP} warm-up round not counted)\n`,
  );
  console.log("| step | n | p50 | p90 | p99 | max | → envd /health answered, p50 / p90 |");
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const [label, k] of rows) {
    const xs = (samples[k] ?? []).map((s) => s.ms);
    const envd = (samples[k] ?? []).flatMap((s) => (s.envdMs === undefined ? [] : [s.envdMs]));
    const p99 = xs.length >= 100 ? `${p(xs, 99)} ms` : "(n < 100)";
    console.log(
      `| ${label} | ${xs.length} | ${p(xs, 50)} ms | ${p(xs, 90)} ms | ${p99} | ${Math.max(...xs).toFixed(0)} ms | ${envd.length ? `${p(envd, 50)} / ${p(envd, 90)} ms` : "–"} |`,
    );
  }
  const ratio = (a: string, b: string, envd = false) => (at(a, 50, envd) / at(b, 50, envd)).toFixed(3);
  console.log("\n| p50 ratio, same run | ÷ fresh pod, image on the node | ÷ fresh pod, pulled | goal |");
  console.log("| --- | --- | --- | --- |");
  console.log(
    `| swap claim → Running | ${ratio("claim swap", "fresh warm")} | ${ratio("claim swap", "fresh pull")} | ≤ 0.2 |`,
  );
  console.log(
    `| fast-path claim → Running | ${ratio("claim fast", "fresh warm")} | ${ratio("claim fast", "fresh pull")} | ≤ 0.1 |`,
  );
  console.log(
    `| swap claim → envd answers (÷ fresh pod → envd answers) | ${ratio("claim swap", "fresh warm", true)} | ${ratio("claim swap", "fresh pull", true)} | |`,
  );
  console.log(
    `| fast-path claim → envd answers (÷ fresh pod → envd answers) | ${ratio("claim fast", "fresh warm", true)} | ${ratio("claim fast", "fresh pull", true)} | |`,
  );
  const notes = (k: string) => {
    const counts = new Map<string, number>();
    for (const s of samples[k] ?? []) {
      const n = (s.note ?? "").replace(/\d+(\.\d+)?(ms|s|µs)\b/g, "…").replace(/\d{4,} bytes/g, "… bytes");
      counts.set(n, (counts.get(n) ?? 0) + 1);
    }
    return [...counts].map(([n, c]) => `${c}× ${n}`).join("; ");
  };
  console.log(`\nThe kubelet's Pulled events, fresh pods with the image on the node: ${notes("fresh warm")}`);
  console.log(`Fresh pods pulled from the registry: ${notes("fresh pull")}`);
  console.log(`The sandbox container's image when the swap claim answered: ${notes("claim swap")}`);
  console.log(
    `The kubelet's crashLoopBackOff.maxContainerRestartPeriod: ${restartPeriod}; its BackOff events (pod: count): ${backoffs.join(", ") || "none"}`,
  );
  console.log(`\n${json({ rounds: ROUNDS, warmup: WARMUP, settleMs: SETTLE_MS, samples })}`);
}
