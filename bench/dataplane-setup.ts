// What `npm run bench:dataplane` starts from, on a running benchmark cluster: the sandbox side
// (envd stand-in and the bench's holding server, bench/dataplane-pod.ts) in a process, the Node
// host with its sandbox router in another (bench/host-process.ts), a pool of one pod, one sandbox
// claimed through the E2B API, a minimal Node proxy to its envd in a third process (the control,
// bench/dataplane-control-proxy.ts), and a large file in that sandbox's directory.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import type { V1Pod } from "@kubernetes/client-node";
import { nodeFlagsOf } from "../hosts/node/data-plane/settings.ts";
import type { ClusterState } from "../infra/cluster/state.ts";
import { SANDBOX_ID_LABEL, SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../lib/crd/keys.ts";
import { forkIpc, type IpcChild } from "./child-ipc.ts";
import type { Side, Target } from "./dataplane-measure.ts";
import { benchNamespacesAndHost, type HostProcess, httpsClient, namedPool, waitFor } from "./support.ts";

/** BIG_FILE is the file the downloads read, in the sandbox's home directory. */
export const BIG_FILE = "/home/user/bench-download.bin";

/** Bench is everything the rounds use. */
export interface Bench {
  host: HostProcess;
  pod: IpcChild<{ envdPort: number; holdPort: number }>;
  /** control is the minimal Node proxy to the sandbox's envd (no routing: one upstream). */
  control: IpcChild<{ port: number }>;
  sandboxId: string;
  envdToken: string;
  podIP: string;
  /** routerUrl is the router's plain listener; directUrl the envd stand-in on the pod's IP. */
  routerUrl: string;
  directUrl: string;
  /** envd is where a side's envd requests go (router: header routing to port 49983). */
  envd: Record<Side, Target>;
  /** hold is the bench's holding server, through the router (header routing to its port). */
  hold: Target;
  /** sdkEnv configures the e2b SDK for this cluster and API key. */
  sdkEnv: Record<string, string>;
}

const NS = "bench";
const json = JSON.stringify;

/** must fails the bench with what answered, unless the status is the one wanted. */
function must<T extends { status: number; body: string }>(what: string, want: number, res: T): T {
  if (res.status !== want) throw new Error(`${what}: ${res.status} ${res.body.slice(0, 300)}`);
  return res;
}

/** startBench starts the three processes and claims the sandbox; bytes is the big file's size. */
export async function startBench(
  state: ClusterState,
  bytes: number,
  log: (line: string) => void,
): Promise<Bench> {
  const pod = await forkIpc<{ envdPort: number; holdPort: number }>(
    new URL("./dataplane-pod.ts", import.meta.url),
    [],
  );
  const { envdPort, holdPort } = pod.ready;
  const { admin, host } = await benchNamespacesAndHost(state, NS, {
    sealingKey: randomBytes(32).toString("hex"),
    sandboxDomain: "sandbox.bench.test",
    envdPort,
    // ROUTER_NODE_FLAGS: the router process's Node flags ("" none), or "thread" (a worker thread).
    dataPlane: {
      plainPort: 0,
      ...(process.env.ROUTER_NODE_FLAGS === undefined
        ? {}
        : { runsIn: nodeFlagsOf(process.env.ROUTER_NODE_FLAGS) }),
    },
  });
  const routerPort = host.dataPlane?.plain;
  if (!routerPort) throw new Error("the host did not start its sandbox router");
  must(
    "pool",
    201,
    await admin(
      "POST",
      `/apis/agents.navix.sh/v1alpha1/namespaces/${NS}/sandboxpools`,
      json(namedPool(NS, "p", 1)),
    ),
  );
  const pods = async (selector: string) =>
    (
      JSON.parse((await admin("GET", `/api/v1/namespaces/${NS}/pods?labelSelector=${selector}`)).body) as {
        items: V1Pod[];
      }
    ).items;
  log("waiting for the pool's pod");
  await waitFor(async () =>
    (await pods(`${SANDBOX_POOL_LABEL}=p`)).some(
      (p) =>
        p.metadata?.labels?.[SANDBOX_PHASE_LABEL] === "idle" &&
        p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
    ),
  );
  const { key } = await host.ask({ op: "key", team: "bench", user: "bench" });
  const api = httpsClient(
    `https://127.0.0.1:${state.hostPort}`,
    readFileSync(state.caCert),
    { "x-api-key": key },
    4,
  );
  const created = must("create", 201, await api("POST", "/e2b/sandboxes", json({ templateID: `${NS}/p` })));
  const { sandboxID: sandboxId, envdAccessToken: envdToken } = JSON.parse(created.body) as {
    sandboxID: string;
    envdAccessToken: string;
  };
  const [claimed] = await pods(`${SANDBOX_ID_LABEL}=${sandboxId}`);
  const podIP = claimed?.status?.podIP ?? "";
  if (!podIP) throw new Error(`sandbox ${sandboxId} has no pod IP`);
  const route = (port: number) => ({ "e2b-sandbox-id": sandboxId, "e2b-sandbox-port": String(port) });
  const control = await forkIpc<{ port: number }>(new URL("./dataplane-control-proxy.ts", import.meta.url), [
    podIP,
    String(envdPort),
  ]);
  const bench: Bench = {
    host,
    pod,
    control,
    sandboxId,
    envdToken,
    podIP,
    routerUrl: `http://127.0.0.1:${routerPort}`,
    directUrl: `http://${podIP}:${envdPort}`,
    envd: {
      router: {
        host: "127.0.0.1",
        port: routerPort,
        headers: { ...route(49983), "x-access-token": envdToken },
      },
      direct: { host: podIP, port: envdPort, headers: { "x-access-token": envdToken } },
      control: { host: "127.0.0.1", port: control.ready.port, headers: { "x-access-token": envdToken } },
    },
    hold: { host: "127.0.0.1", port: routerPort, headers: route(holdPort) },
    sdkEnv: {
      E2B_API_URL: `https://127.0.0.1:${state.hostPort}/e2b`,
      E2B_API_KEY: key,
      NODE_EXTRA_CA_CERTS: state.caCert,
    },
  };
  log(`sandbox ${sandboxId} on ${podIP}: waiting until envd has it and the router routes it`);
  const answers = async (url: string, headers: Record<string, string>) =>
    (await fetch(url, { headers, signal: AbortSignal.timeout(5_000) })).ok;
  await waitFor(
    async () =>
      (await answers(`${bench.directUrl}/envs`, { "x-access-token": envdToken })) &&
      (await answers(`${bench.routerUrl}/health`, route(49983))),
  );
  log(`writing ${bytes} bytes to ${BIG_FILE} (envd, direct)`);
  await upload(bench.envd.direct, BIG_FILE, bytes);
  return bench;
}

/** upload writes `bytes` random bytes (1 MiB repeated) to path through envd's POST /files. */
function upload(target: Target, path: string, bytes: number): Promise<void> {
  const chunk = randomBytes(1 << 20);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.host,
        port: target.port,
        method: "POST",
        path: `/files?path=${encodeURIComponent(path)}`,
        headers: { ...target.headers, "content-type": "application/octet-stream", "content-length": bytes },
      },
      (res) => {
        let body = "";
        res.on("data", (c: Buffer) => {
          body += c.toString();
        });
        res.on("end", () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`upload: ${res.statusCode} ${body}`)),
        );
      },
    );
    req.setTimeout(120_000, () => req.destroy(new Error("upload took over 120 s")));
    req.on("error", reject);
    (async () => {
      for (let sent = 0; sent < bytes; sent += chunk.length) {
        const part = chunk.subarray(0, Math.min(chunk.length, bytes - sent));
        if (!req.write(part)) await new Promise((r) => req.once("drain", r));
      }
      req.end();
    })().catch(reject);
  });
}

/** removeFile deletes path in the sandbox (filesystem.Filesystem/Remove, Connect JSON). */
export async function removeFile(bench: Bench, path: string): Promise<void> {
  const res = await fetch(`${bench.directUrl}/filesystem.Filesystem/Remove`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-access-token": bench.envdToken },
    body: json({ path }),
    signal: AbortSignal.timeout(10_000),
  });
  if (res.status !== 200) throw new Error(`remove ${path}: ${res.status} ${await res.text()}`);
}
