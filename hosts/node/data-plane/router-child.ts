import type { KubeConfig } from "@kubernetes/client-node";
import type { Counter, MetricObjectWithValues, MetricValue } from "prom-client";
import type { KubeTimeouts } from "../../../lib/kube/transport.ts";
import type { Log } from "../../../lib/util/log.ts";
import { credentialsOf, kubeconfigAccess } from "../kube-transport.ts";
import { superviseThread } from "../supervised-child.ts";
import type { DataPlane, DataPlaneConfig } from "./data-plane.ts";
import { DATA_PLANE_NODE_FLAGS, type DataPlaneSettings } from "./settings.ts";

/** DataPlaneThreadSettings start the router's thread; they cross threads, so plain data only. */
export interface DataPlaneThreadSettings {
  /** server is the API server's URL (the thread asks the host for credentials: "credentials"). */
  server: string;
  kubeTimeouts?: Partial<KubeTimeouts>;
  config: DataPlaneConfig;
}

/** ToDataPlane is what the host's thread sends the router's (supervised-child.ts adds ids). */
export type ToDataPlane =
  | { op: "forget"; sandboxId: string }
  | { op: "activity"; id: number }
  | { op: "metrics"; id: number }
  | { op: "close"; id: number };

/** DataPlaneThread is the sandbox router in its thread, as the host uses it. */
export interface DataPlaneThread {
  /** ports are where the listeners listen (a restarted thread listens on the same ones). */
  ports: DataPlane["ports"];
  /** forget drops a released sandbox's route and connections (this host's release), at once. */
  forget(sandboxId: string): void;
  /** activity is each routed sandbox's last activity, now for one with an open exchange. */
  activity(): Promise<ReadonlyMap<string, Date>>;
  /** metrics are the thread's metrics as prom-client's JSON (merged into the host's /metrics). */
  metrics(): Promise<MetricObjectWithValues<MetricValue<string>>[]>;
  /** kill ends the thread as a crash would (it is started again); its exit code. */
  kill(): Promise<number>;
  close(): Promise<void>;
  /** pid is the router's process id when it runs as a process of its own (benchmarks read its CPU). */
  pid(): number | undefined;
}

/**
 * DataPlaneRunsIn says where the router runs: a worker thread of the host's process, or a child
 * process with Node flags of its own (the host's default, ADR 0036).
 */
export type DataPlaneRunsIn = { thread: true } | { process: { nodeFlags: readonly string[] } };

/**
 * startDataPlaneThread runs the sandbox router (data-plane.ts) in a process of its own (runsIn,
 * the host's default) or a worker thread, and keeps it running (superviseThread: one that dies is
 * started again; its streams are cut, as a host's crash would cut them). A restart listens where the first start did, so a port 0
 * (any free port) stays the one the host reported.
 */
export async function startDataPlaneThread(
  kubeconfig: KubeConfig,
  settings: Omit<DataPlaneThreadSettings, "server">,
  log: Log,
  restarts?: Counter<never>,
  runsIn: DataPlaneRunsIn = { thread: true },
): Promise<DataPlaneThread> {
  const access = kubeconfigAccess(kubeconfig);
  const ports: DataPlane["ports"] = {};
  const { plain, tls } = settings.config;
  const thread = await superviseThread({
    name: "data plane",
    url: new URL("./router-child-main.ts", import.meta.url),
    workerData: (): DataPlaneThreadSettings => ({
      ...settings,
      server: access.server,
      config: {
        ...settings.config,
        ...(plain ? { plain: { ...plain, port: ports.plain ?? plain.port } } : {}),
        ...(tls ? { tls: { ...tls, port: ports.tls ?? tls.port } } : {}),
      },
    }),
    log,
    restarts,
    // The kubeconfig's credentials (tokens, certificates, exec plugins) are applied here.
    answers: { credentials: () => credentialsOf(access) },
    onReady: (info) => Object.assign(ports, info),
    ...("process" in runsIn ? { process: runsIn.process } : {}),
  });
  return {
    ports,
    forget: (sandboxId) => {
      thread.post({ op: "forget", sandboxId });
    },
    activity: async () =>
      new Map(
        (await thread.ask<[string, number][]>({ op: "activity" })).map(([id, at]) => [id, new Date(at)]),
      ),
    metrics: () => thread.ask<MetricObjectWithValues<MetricValue<string>>[]>({ op: "metrics" }),
    kill: () => thread.kill(),
    close: () => thread.close(),
    pid: () => thread.pid(),
  };
}

/** RouterHost is what the router takes from the host's own settings besides DataPlaneSettings. */
export interface RouterHost {
  /** listen: the API's listener; the router binds its host by default and serves TLS with its certificate. */
  listen: { host: string; certFile: string; keyFile: string };
  envdPort: number;
  sandboxDomain?: string;
  sealingKey?: string;
  kubeTimeouts?: Partial<KubeTimeouts>;
}

/**
 * startRouter starts the sandbox router as the host's settings say (startDataPlaneThread): its
 * listeners on the router's host (the API's by default), TLS with the API's certificate, and in a
 * process of its own with DATA_PLANE_NODE_FLAGS unless the settings say otherwise.
 */
export function startRouter(
  kubeconfig: KubeConfig,
  dp: DataPlaneSettings,
  host: RouterHost,
  log: Log,
  restarts?: Counter<never>,
): Promise<DataPlaneThread> {
  const bind = dp.host ?? host.listen.host;
  return startDataPlaneThread(
    kubeconfig,
    {
      ...(host.kubeTimeouts ? { kubeTimeouts: host.kubeTimeouts } : {}),
      config: {
        ...(host.sandboxDomain ? { domain: host.sandboxDomain } : {}),
        ...(dp.routerNames ? { routerNames: dp.routerNames } : {}),
        ...(host.sealingKey ? { sealingKey: host.sealingKey } : {}),
        envdPort: host.envdPort,
        ...(dp.namespace ? { namespace: dp.namespace } : {}),
        ...(dp.plainPort !== undefined ? { plain: { host: bind, port: dp.plainPort } } : {}),
        ...(dp.tlsPort !== undefined
          ? {
              tls: {
                host: bind,
                port: dp.tlsPort,
                certFile: host.listen.certFile,
                keyFile: host.listen.keyFile,
              },
            }
          : {}),
      },
    },
    log,
    restarts,
    dp.runsIn === "thread"
      ? { thread: true }
      : { process: { nodeFlags: dp.runsIn?.nodeFlags ?? DATA_PLANE_NODE_FLAGS } },
  );
}
