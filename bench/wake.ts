// `npm run bench:wake`: how long a create waits when its Env is at zero, against kwok's pull delay.
// For each pull delay (PULL_DELAYS, ms; one cluster each) it wakes WAKES fresh Envs from zero, one
// at a time: a create with `waitTimeout` (no `wait`: its 201 comes once a pod is claimed), then the
// sandbox's start, timed from watches of the member pool and its pods. A wake cannot take less than
// two pulls: the new pod pulls its idle image, and the claim swaps in the sandbox's image. See
// docs/benchmarks.md.
import { readFileSync } from "node:fs";
import { KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { down } from "../infra/cluster/down.ts";
import { up } from "../infra/cluster/up.ts";
import { SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import type { SandboxPool } from "../lib/crd/sandbox-pool.ts";
import { PENDING_REQUESTS_PREFIX } from "../lib/pool/pending-requests.ts";
import { follow } from "./follow.ts";
import { type adminClient, benchNamespacesAndHost, httpsClient, percentile, waitFor } from "./support.ts";

const PULL_DELAYS = (process.env.PULL_DELAYS ?? "500,1000").split(",").map(Number);
const WAKES = Number(process.env.WAKES ?? 10);
const NS = "bench";
const API = "/apis/agents.navix.sh/v1alpha1";
const log = (line: string) => console.error(`[bench] ${line}`);
const json = JSON.stringify;

/** Stages are ms from the create's send to each step of the wake (undefined: not seen). */
interface Stages {
  marked?: number;
  scaled?: number;
  podCreated?: number;
  podReady?: number;
  answered?: number;
  running?: number;
}

const rows: (Stages & { pullDelayMs: number })[] = [];
for (const pullDelayMs of PULL_DELAYS) {
  const name = `bench-wake-${process.pid}-${pullDelayMs}`;
  const state = await up({ name, nodes: 3, pullDelayMs, backoffDelayMs: 1000, log });
  try {
    const { admin, host } = await benchNamespacesAndHost(state, NS);
    const template = {
      apiVersion: "agents.navix.sh/v1alpha1",
      kind: "SandboxTemplate",
      metadata: { name: "bench-wake" },
      spec: {
        idleImage: "registry.local/sandbox/idle:1",
        template: { spec: { containers: [{ name: "sandbox", image: "registry.local/sandbox/base:1" }] } },
      },
    };
    const created = await admin("POST", `${API}/sandboxtemplates`, json(template));
    if (created.status !== 201) throw new Error(`template: ${created.status} ${created.body}`);
    const { key } = await host.ask({ op: "key", team: "bench", user: "bench" });
    const api = httpsClient(
      `https://127.0.0.1:${state.hostPort}`,
      readFileSync(state.caCert),
      { "x-api-key": key },
      8,
    );
    const kc = new KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    for (let i = 0; i < WAKES; i++) {
      const stages = await wake(kc, admin, api, `wake-${i}`);
      log(`pull ${pullDelayMs} ms, wake ${i}: ${json(stages)}`);
      console.log(json({ pullDelayMs, ...stages }));
      rows.push({ pullDelayMs, ...stages });
    }
    await host.ask({ op: "close" }).catch(() => {});
  } finally {
    await down(name, log);
  }
}
console.log(table());

/** wake creates an Env at zero, waits until its member pool is settled, and wakes it once. */
async function wake(
  kc: KubeConfig,
  admin: ReturnType<typeof adminClient>,
  api: ReturnType<typeof httpsClient>,
  env: string,
): Promise<Stages> {
  const member = `${env}-a`;
  const body = {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxEnv",
    metadata: { name: env, namespace: NS },
    spec: {
      templateRef: { name: "bench-wake" },
      clusters: [{ clusterID: "local", members: [{ name: member, config: { scalingGroup: "default" } }] }],
      autoscaling: { groups: [{ name: "default", enabled: true, minReplicas: 0, maxReplicas: 10 }] },
    },
  };
  const res = await admin("POST", `${API}/namespaces/${NS}/sandboxenvs`, json(body));
  if (res.status !== 201) throw new Error(`Env: ${res.status} ${res.body}`);
  await waitFor(async () => {
    const pool = await admin("GET", `${API}/namespaces/${NS}/sandboxpools/${member}`);
    return pool.status === 200 && Boolean((JSON.parse(pool.body) as SandboxPool).status);
  });
  // Let the Env's and pool's first runs settle, so the wake starts from a quiet Env at zero.
  await new Promise((r) => setTimeout(r, 2000));
  const stages: Stages = {};
  let t0 = Number.POSITIVE_INFINITY;
  const at = () => Math.round(performance.now() - t0);
  const once = (k: keyof Stages) => {
    if (performance.now() >= t0) stages[k] ??= at();
  };
  const onPool = (pool: SandboxPool) => {
    if (pool.metadata?.name !== member) return;
    const keys = Object.keys(pool.metadata?.annotations ?? {});
    if (keys.some((k) => k.startsWith(PENDING_REQUESTS_PREFIX))) once("marked");
    if (pool.spec.replicas > 0) once("scaled");
  };
  const onPod = (_type: string, pod: V1Pod) => {
    const phase = pod.metadata?.labels?.[SANDBOX_PHASE_LABEL];
    const ready = pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
    once("podCreated");
    if (phase === "idle" && ready) once("podReady");
    if (phase === "running") once("running");
  };
  const following = await Promise.all([
    follow<SandboxPool>(
      kc,
      `${API}/namespaces/${NS}/sandboxpools`,
      undefined,
      () => {},
      (_t, p) => onPool(p),
    ),
    follow<V1Pod>(kc, `/api/v1/namespaces/${NS}/pods`, `${SANDBOX_POOL_LABEL}=${member}`, () => {}, onPod),
  ]);
  try {
    t0 = performance.now();
    const created = await api("POST", "/v1/sandboxes", json({ env: `${NS}/${env}`, waitTimeout: 30 }));
    if (created.status !== 201) throw new Error(`create: ${created.status} ${created.body}`);
    stages.answered = at();
    await waitFor(async () => stages.running !== undefined, 30_000);
    const id = (JSON.parse(created.body) as { sandboxId: string }).sandboxId;
    await api("DELETE", `/v1/sandboxes/${id}`);
  } finally {
    for (const f of following) f.stop();
  }
  await admin("DELETE", `${API}/namespaces/${NS}/sandboxenvs/${env}`);
  return stages;
}

function table(): string {
  const stageNames: [keyof Stages, string][] = [
    ["marked", "pending mark"],
    ["scaled", "pool scaled"],
    ["podCreated", "pod created"],
    ["podReady", "pod idle, Ready"],
    ["answered", "201 (claimed)"],
    ["running", "Running"],
  ];
  const lines = [
    `| pull delay | wakes | ${stageNames.map(([, label]) => label).join(" | ")} | Running − 2 pulls |`,
    `| --- | --- | ${stageNames.map(() => "---").join(" | ")} | --- |`,
  ];
  for (const pull of PULL_DELAYS) {
    const mine = rows.filter((r) => r.pullDelayMs === pull);
    const cell = (k: keyof Stages) => {
      const xs = mine.flatMap((r) => (r[k] === undefined ? [] : [r[k] as number]));
      return xs.length ? `${percentile(xs, 50).toFixed(0)} (${Math.min(...xs)}–${Math.max(...xs)})` : "–";
    };
    const over = mine.flatMap((r) => (r.running === undefined ? [] : [r.running - 2 * pull]));
    lines.push(
      `| ${pull} ms | ${mine.length} | ${stageNames.map(([k]) => cell(k)).join(" | ")} | ${percentile(over, 50).toFixed(0)} ms |`,
    );
  }
  return `ms from the create's send, median (min–max):\n${lines.join("\n")}`;
}
