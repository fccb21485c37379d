import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { Agent, request } from "node:https";
import { join } from "node:path";
import { KubeConfig, type V1Pod } from "@kubernetes/client-node";
import type { HostDeps } from "../functions/host-deps.ts";
import { tick } from "../functions/runs/tick.ts";
import { type HostConfig, startHost } from "../hosts/node/host.ts";
import { installCrds, registerWebhooks } from "../infra/cluster/install.ts";
import type { ClusterState } from "../infra/cluster/state.ts";
import { SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import type { Log } from "../lib/util/log.ts";
import { forkIpc } from "./child-ipc.ts";

/** quiet is a Log that drops everything (benchmarks report figures, not logs). */
export const quiet: Log = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * benchHost installs the CRDs on a benchmark cluster and runs the real Node host against it, with
 * the webhooks registered; `options` adjusts the host (tick, audit filter).
 */
export async function benchHost(state: ClusterState, options: Partial<HostConfig> = {}) {
  const kc = new KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  await installCrds(kc);
  const host = await startHost({
    kubeconfig: kc,
    callbackToken: readFileSync(state.callbackTokenFile, "utf8").trim(),
    adminToken: randomBytes(16).toString("hex"),
    metricsToken: BENCH_METRICS_TOKEN,
    historyPath: join(state.dir, "bench-history.sqlite"),
    listen: {
      host: "127.0.0.1",
      port: state.hostPort,
      certFile: state.webhookCert,
      keyFile: state.webhookKey,
    },
    tickSeconds: 0,
    // The usage sampler is off unless the run asks for it: on kwok it reads kwok's simulated
    // metrics of every pod of a node (CEL per pod), which costs the 2-core bench machine about a
    // third of its bare PATCH rate (docs/benchmarks.md, issue #38) and is not the claims' cost.
    usageSampleSeconds: Number(process.env.AGENTBOX_USAGE_SAMPLE_SECONDS ?? 0),
    tickConcurrency: 8,
    log: quiet,
    // Envs are reconciled (and routed) for the local segment, as `npm start` does.
    clusterId: "local",
    ...options,
  });
  await registerWebhooks(kc, `https://127.0.0.1:${state.hostPort}`, state.caCert);
  return { kc, host };
}

/** BENCH_METRICS_TOKEN opens a benchmark host's /metrics (a local, throwaway cluster's). */
export const BENCH_METRICS_TOKEN = "bench-metrics-token";

/** HostProcess is the Node host running in a child process (bench/host-process.ts). */
export interface HostProcess {
  pid: number;
  /** dataPlane is where its sandbox router listens, when HostOverrides.dataPlane asked for one. */
  dataPlane?: { plain?: number; tls?: number; pid?: number };
  /** ask sends one request and resolves with its answer (rejects when the host reports an error). */
  ask(request: { op: "key"; team: string; user: string }): Promise<{ key: string }>;
  ask(request: { op: "loop" }): Promise<{ p50: number; p99: number; max: number }>;
  ask(request: { op: "memory" }): Promise<NodeJS.MemoryUsage>;
  ask(request: { op: "tick" | "idle" | "close" }): Promise<unknown>;
}

/**
 * HostOverrides are the host settings a benchmark may add to a forked host (sent as JSON); listen,
 * historyPath and instanceId let several hosts share one cluster (and one machine).
 */
export type HostOverrides = Pick<
  HostConfig,
  "dataPlane" | "sealingKey" | "sandboxDomain" | "envdPort" | "autoscale"
> &
  Partial<Pick<HostConfig, "listen" | "historyPath" | "instanceId">>;

/**
 * forkHost starts the Node host for a running benchmark cluster in its own process, with the
 * audit-triggered reconciles on or off (and overrides), and resolves once it serves.
 */
export async function forkHost(
  state: ClusterState,
  reconcile: "on" | "off",
  overrides: HostOverrides = {},
): Promise<HostProcess> {
  // BENCH_HOST_PROFILE=DIR writes the host's V8 CPU profile there when it exits.
  const profileDir = process.env.BENCH_HOST_PROFILE;
  // BENCH_HOST_NODE_FLAGS="--flag …" starts the host's process with those Node/V8 flags too.
  const flags = (process.env.BENCH_HOST_NODE_FLAGS ?? "").split(" ").filter(Boolean);
  const execArgv = [
    ...process.execArgv,
    ...flags,
    ...(profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : []),
  ];
  const child = await forkIpc<{ dataPlane?: HostProcess["dataPlane"] }>(
    new URL("./host-process.ts", import.meta.url),
    [state.name, reconcile, JSON.stringify(overrides)],
    { execArgv },
  );
  return {
    pid: child.pid,
    ...(child.ready.dataPlane ? { dataPlane: child.ready.dataPlane } : {}),
    ask: child.ask,
  } as HostProcess;
}

/**
 * benchNamespacesAndHost creates the API keys' namespace and the benchmark's, waits until pods
 * may be created in the latter (its default service account), and forks the host with its
 * reconciles on (and overrides): the start every load benchmark shares.
 */
export async function benchNamespacesAndHost(
  state: ClusterState,
  namespace: string,
  overrides: HostOverrides = {},
) {
  const admin = adminClient(state);
  for (const ns of ["agentbox-system", namespace])
    await admin("POST", "/api/v1/namespaces", JSON.stringify({ metadata: { name: ns } }));
  await waitFor(
    async () =>
      (await admin("GET", `/api/v1/namespaces/${namespace}/serviceaccounts/default`)).status === 200,
  );
  return { admin, host: await forkHost(state, "on", overrides) };
}

/**
 * benchTenant is benchNamespacesAndHost plus what a load benchmark takes from it: the processes
 * whose CPU it reads (the cluster's and the host's) and a client of the host's /v1 API with a key
 * of team "bench".
 */
export async function benchTenant(state: ClusterState, namespace: string) {
  const { admin, host } = await benchNamespacesAndHost(state, namespace);
  const processes = [...state.processes, { name: "host (Node)", pid: host.pid }];
  const { key } = await host.ask({ op: "key", team: "bench", user: "bench" });
  const api = httpsClient(`https://127.0.0.1:${state.hostPort}`, readFileSync(state.caCert), {
    "x-api-key": key,
  });
  return { admin, host, processes, api };
}

/** waitFor polls check (errors count as "not yet") until it holds or the deadline passes. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("timed out");
}

/** percentile is the p-th percentile of xs (nearest rank). */
export function percentile(xs: readonly number[], p: number): number {
  return [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? 0;
}

/**
 * cpuSeconds reads the CPU time (user + system) each process has used so far, from
 * /proc/<pid>/stat (clock ticks of 10 ms); the bench process reports its own under `self`.
 * Two readings around a phase say which process the phase kept busy.
 */
export function cpuSeconds(
  processes: readonly { name: string; pid: number }[],
  self = "bench+host",
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of processes) {
    try {
      const fields = readFileSync(`/proc/${p.pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
      out[p.name] = (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      out[p.name] = Number.NaN;
    }
  }
  const own = process.cpuUsage();
  out[self] = (own.user + own.system) / 1e6;
  return out;
}

/**
 * growth is what each counter of two readings grew by, largest first: the rows of the benchmarks'
 * "what did this phase cost" tables (CPU seconds per process, requests per kind).
 */
export function growth(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
): [string, number][] {
  return [...after]
    .map(([k, v]): [string, number] => [k, v - (before.get(k) ?? 0)])
    .sort((a, b) => b[1] - a[1]);
}

/** cpuTable prints the CPU seconds each process used between two cpuSeconds readings. */
export function cpuTable(
  title: string,
  before: Record<string, number>,
  after: Record<string, number>,
  wallSeconds: number,
): string {
  const rows = growth(new Map(Object.entries(before)), new Map(Object.entries(after)));
  const lines = [`| ${title} | CPU s | share of 2 cores |`, "| --- | --- | --- |"];
  for (const [k, s] of rows)
    lines.push(`| ${k} | ${s.toFixed(2)} | ${((100 * s) / (2 * wallSeconds)).toFixed(0)} % |`);
  return lines.join("\n");
}

/** RawResponse is a response as the benchmarks read it: status, headers, text and the raw bytes. */
export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  bytes: Buffer;
}

/** Send issues one HTTPS request (body already encoded) and resolves with the whole response. */
export type Send = (
  method: string,
  path: string,
  body?: string,
  headers?: Record<string, string>,
) => Promise<RawResponse>;

/**
 * httpsClient sends requests to one base URL over a keep-alive pool, trusting ca, with headers on
 * every request: the benchmarks' load generator, kept apart from the code under test.
 */
export function httpsClient(
  base: string,
  ca: Buffer,
  headers: Record<string, string>,
  maxSockets = 256,
): Send {
  // Idle sockets are dropped after 4 s, before any server here closes them (Node's default is
  // 5 s), so a burst after a quiet phase never reuses a socket the server is closing.
  const agent = new Agent({ keepAlive: true, maxSockets, timeout: 4000 });
  return (method, path, body, extra = {}) =>
    new Promise((resolve, reject) => {
      const r = request(
        `${base}${path}`,
        { method, ca, agent, headers: { "content-type": "application/json", ...headers, ...extra } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            const bytes = Buffer.concat(chunks);
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: bytes.toString("utf8"),
              bytes,
            });
          });
          res.on("error", reject);
        },
      );
      r.on("error", reject);
      r.end(body);
    });
}

/** serverTiming reads a Server-Timing header into name → milliseconds. */
export function serverTiming(res: RawResponse): Record<string, number> {
  const header = res.headers["server-timing"];
  const out: Record<string, number> = {};
  for (const part of (Array.isArray(header) ? header.join(",") : (header ?? "")).split(",")) {
    const [name, ...params] = part.trim().split(";");
    const dur = params.find((p) => p.startsWith("dur="));
    if (name && dur) out[name] = Number(dur.slice(4));
  }
  return out;
}

/** adminClient reaches a benchmark cluster's apiserver as its admin (system:masters). */
export function adminClient(state: ClusterState): Send {
  const token = readFileSync(join(state.dir, "admin-token"), "utf8").trim();
  return httpsClient(state.server, readFileSync(state.caCert), { authorization: `Bearer ${token}` });
}

/** fetchJson sends one request to the benchmark cluster's apiserver with the kubeconfig's credentials. */
export async function fetchJson(kc: KubeConfig, method: string, path: string, body?: unknown) {
  const { httpsRequest } = await import("../infra/cluster/http.ts");
  const tls = {};
  await kc.applyToHTTPSOptions(tls);
  const res = await httpsRequest(`${kc.getCurrentCluster()!.server}${path}`, {
    method,
    tls,
    headers: { "content-type": "application/json" },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { ok: res.status < 300, body: JSON.parse(res.body || "{}") as unknown };
}

/** benchPool is pool `p<i>` of a benchmark: `replicas` idle pods of a small image, no template. */
export function benchPool(ns: string, i: number, replicas: number, annotations: Record<string, string> = {}) {
  return namedPool(ns, `p${i}`, replicas, annotations);
}

/** namedPool is a benchmark pool named `name`: `replicas` idle pods of a small image, no template. */
export function namedPool(
  ns: string,
  name: string,
  replicas: number,
  annotations: Record<string, string> = {},
) {
  return {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxPool",
    metadata: { name, namespace: ns },
    spec: {
      replicas,
      idleImage: "registry.local/sandbox/idle:1",
      template: {
        metadata: { annotations },
        spec: { containers: [{ name: "sandbox", image: "registry.local/sandbox/base:1" }] },
      },
    },
  };
}

/** createPools creates pools p0 … p<count-1> in ns. */
export async function createPools(
  kc: KubeConfig,
  ns: string,
  count: number,
  replicas: number,
): Promise<void> {
  for (let i = 0; i < count; i++)
    await fetchJson(
      kc,
      "POST",
      `/apis/agents.navix.sh/v1alpha1/namespaces/${ns}/sandboxpools`,
      benchPool(ns, i, replicas),
    );
}

/**
 * tickUntilSettled runs ticks over ns until `pods` pool pods are idle and Ready and a tick writes
 * nothing (every status reflects them), logging progress; it fails after 200 ticks.
 */
export async function tickUntilSettled(
  deps: HostDeps,
  kc: KubeConfig,
  ns: string,
  pods: number,
  log: (line: string) => void,
): Promise<void> {
  for (let round = 0; round < 200; round++) {
    const report = await tick(deps, { namespace: ns, periodMs: 0, jitter: 0, concurrency: 16 });
    const list = (
      await fetchJson(kc, "GET", `/api/v1/namespaces/${ns}/pods?labelSelector=${SANDBOX_POOL_LABEL}`)
    ).body as { items: V1Pod[] };
    const idleReady = list.items.filter(
      (p) =>
        p.metadata?.labels?.[SANDBOX_PHASE_LABEL] === "idle" &&
        p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    ).length;
    if (round % 5 === 0) log(`round ${round}: ${idleReady}/${pods} idle and ready, ${report.writes} writes`);
    if (idleReady === pods && report.writes === 0) return;
  }
  throw new Error("the pools did not settle");
}

/** benchNamespace creates a namespace and waits until pods can be made in it (its service account). */
export async function benchNamespace(kc: KubeConfig, ns: string): Promise<void> {
  await fetchJson(kc, "POST", "/api/v1/namespaces", { metadata: { name: ns } });
  await waitFor(
    async () => (await fetchJson(kc, "GET", `/api/v1/namespaces/${ns}/serviceaccounts/default`)).ok,
  );
}
