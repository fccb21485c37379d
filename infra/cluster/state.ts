import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RealNodeState } from "./real-node/real-node.ts";

/**
 * ClusterState is what `cluster up` records about one running local control plane, so that
 * `down`, `status`, `env` and the test setup act on exactly what was started.
 */
export interface ClusterState {
  name: string;
  dir: string;
  server: string;
  /** kubeconfig with the admin token (system:masters). */
  kubeconfig: string;
  ports: {
    etcdClient: number;
    etcdPeer: number;
    apiserver: number;
    controllerManager: number;
    scheduler: number;
  };
  /** Where the apiserver delivers audit events and sends admission reviews (the Node host). */
  hostPort: number;
  auditWebhookUrl: string;
  /** Bearer token the apiserver presents to our audit and admission endpoints. */
  callbackTokenFile: string;
  caCert: string;
  webhookCert: string;
  webhookKey: string;
  binDir: string;
  pullDelayMs: number;
  nodes: string[];
  processes: { name: string; pid: number; log: string }[];
  /** realNode is the real node (kubelet, containerd), when `up` started one. */
  realNode?: RealNodeState;
  startedAt: string;
}

/** clusterDir is where a named cluster keeps its state; AGENTBOX_CLUSTER_ROOT moves all of them. */
export function clusterDir(name: string): string {
  const root = process.env.AGENTBOX_CLUSTER_ROOT ?? join(tmpdir(), "agentbox-clusters");
  return join(root, name);
}

export function stateFile(dir: string): string {
  return join(dir, "state.json");
}

export function readState(name: string): ClusterState | undefined {
  const file = stateFile(clusterDir(name));
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, "utf8")) as ClusterState;
}

export function writeState(state: ClusterState): void {
  writeFileSync(stateFile(state.dir), `${JSON.stringify(state, null, 2)}\n`);
}
