// Where a sequential claim's time goes: the same create measured as its parts, in one run on one
// cluster (reconciles off, so nothing else uses the host): the API key lookup, the target reads,
// the whole createSandbox call in-process (no HTTP), and POST /v1/sandboxes over HTTPS.
// `N=200 npm run bench:stages`.
import { readFileSync } from "node:fs";
import { authenticate } from "../functions/api/authenticate.ts";
import { createApiKey } from "../functions/api/create-api-key.ts";
import { createSandbox } from "../functions/api/create-sandbox.ts";
import { readTarget } from "../functions/api/resolve-pool.ts";
import { tick } from "../functions/runs/tick.ts";
import { down } from "../infra/cluster/down.ts";
import { up } from "../infra/cluster/up.ts";
import { SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import { adminClient, benchHost, httpsClient, percentile, waitFor } from "./support.ts";

const N = Number(process.env.N ?? 200);
const name = `bench-stages-${process.pid}`;
const state = await up({
  name,
  nodes: 3,
  pullDelayMs: 0,
  backoffDelayMs: 1000,
  log: (l) => console.error(`[bench] ${l}`),
});
try {
  const { host } = await benchHost(state, { tickSeconds: 0, auditTriggers: false });
  const deps = host.deps;
  const admin = adminClient(state);
  const api = httpsClient(`https://127.0.0.1:${state.hostPort}`, readFileSync(state.caCert), {});
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}, send = admin) =>
    (await send("POST", path, JSON.stringify(body), headers)).status;
  const mergePatch = async (path: string, body: unknown) =>
    (await admin("PATCH", path, JSON.stringify(body), { "content-type": "application/merge-patch+json" }))
      .status;
  for (const ns of ["agentbox-system", "bench"]) await post("/api/v1/namespaces", { metadata: { name: ns } });
  await waitFor(async () => {
    await deps.kube.listPods("bench", "x=y");
    return true;
  });
  const key = await createApiKey(
    { kube: deps.kube, apiKeys: deps.apiKeys, now: () => new Date() },
    { team: "b", user: "b" },
  );
  await post("/apis/agents.navix.sh/v1alpha1/namespaces/bench/sandboxpools", {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxPool",
    metadata: { name: "s", namespace: "bench" },
    spec: {
      replicas: 2 * N + 10,
      idleImage: "registry.local/sandbox/idle:1",
      template: { spec: { containers: [{ name: "sandbox", image: "registry.local/sandbox/base:1" }] } },
    },
  });
  await waitFor(async () => {
    await tick(host.deps, { periodMs: 0, jitter: 0, concurrency: 4 });
    const pods = await deps.kube.listPods("bench", `${SANDBOX_POOL_LABEL}=s,${SANDBOX_PHASE_LABEL}=idle`);
    return (
      pods.items.filter((p) => p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"))
        .length ===
      2 * N + 10
    );
  }, 300_000);
  // time times f N times and checks each answer: a failed call is not a fast one.
  const time = async <T>(f: () => Promise<T>, ok: (answer: T) => boolean) => {
    const xs: number[] = [];
    for (let i = 0; i < N; i++) {
      const t = performance.now();
      const answer = await f();
      xs.push(performance.now() - t);
      if (!ok(answer))
        throw new Error(`call ${i + 1} of ${N} failed: ${JSON.stringify(answer).slice(0, 300)}`);
    }
    return `${percentile(xs, 50).toFixed(1)} ms | ${percentile(xs, 99).toFixed(1)} ms`;
  };
  const tenant = { team: "b", user: "b" };
  // Pods nobody claims in this run, for the bare pod writes.
  const spare = (await deps.kube.listPods("bench", `${SANDBOX_POOL_LABEL}=s`)).items.slice(-2 * N);
  let next = 0;
  const cm = await post("/api/v1/namespaces/bench/configmaps", { metadata: { name: "probe" } });
  if (cm >= 300) throw new Error(`configmap: ${cm}`);
  const rows: [string, string][] = [
    [
      "bare merge-PATCH of a ConfigMap annotation",
      await time(
        () =>
          mergePatch("/api/v1/namespaces/bench/configmaps/probe", {
            metadata: { annotations: { n: String(next++) } },
          }),
        (status) => status === 200,
      ),
    ],
    [
      "bare merge-PATCH of a pod annotation",
      await time(
        () => {
          const pod = spare[next++ % spare.length];
          return mergePatch(`/api/v1/namespaces/bench/pods/${pod?.metadata?.name}`, {
            metadata: { annotations: { n: String(next) } },
          });
        },
        (status) => status === 200,
      ),
    ],
    [
      "API key lookup (watch cache)",
      await time(
        () => authenticate(deps, key),
        (t) => t?.team === "b",
      ),
    ],
    [
      "target reads: pool + first candidate list (parallel)",
      await time(
        () => readTarget(deps, { pool: "bench/s" }),
        (reads) => reads.pool !== undefined,
      ),
    ],
    [
      "createSandbox in-process (reads + claim patch)",
      await time(
        () => createSandbox(deps, tenant, { pool: "bench/s" }),
        (outcome) => outcome.ok,
      ),
    ],
    [
      "POST /v1/sandboxes over HTTPS (all of the above + HTTP)",
      await time(
        () => post("/v1/sandboxes", { pool: "bench/s" }, { "x-api-key": key }, api),
        (status) => status === 201,
      ),
    ],
  ];
  await host.close();
  console.log(`\n## Where a sequential claim's time goes (${N} each, reconciles off)\n`);
  console.log("| stage | p50 | p99 |\n| --- | --- | --- |");
  for (const [what, t] of rows) console.log(`| ${what} | ${t} |`);
} finally {
  await down(name, () => {});
}
