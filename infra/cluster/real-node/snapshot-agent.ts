import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { KubeConfig, type KubernetesObject } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { IMAGE_REGISTRY } from "../../images/refs.ts";
import { serverSideApply } from "../apply.ts";
import { writeKubeconfig } from "../configs.ts";
import type { Started } from "../processes.ts";
import type { RealNodeState } from "./real-node.ts";

/** SNAPSHOT_AGENT_USER is the real node's snapshot agent as the local apiserver knows it (tokens.csv). */
export const SNAPSHOT_AGENT_USER = "agentbox:snapshot-agent";

const AGENT_MAIN = fileURLToPath(new URL("../../../hosts/snapshot-agent/main.ts", import.meta.url));
/** AGENT_RBAC holds the agent's ClusterRole, the same one the DaemonSet's ServiceAccount gets. */
const AGENT_RBAC = fileURLToPath(new URL("../../deploy/components/snapshots/rbac.yaml", import.meta.url));

/** SnapshotAgentContext is what the real node's start lends the agent's. */
export interface SnapshotAgentContext {
  clusterDir: string;
  server: string;
  caCert: string;
  nodeBinDir: string;
  /** agentToken is SNAPSHOT_AGENT_USER's bearer token (up writes it into tokens.csv). */
  agentToken: string;
  run: (name: string, bin: string, args: string[]) => Started;
}

/**
 * startNodeSnapshotAgent runs the snapshot agent (hosts/snapshot-agent/main.ts) beside the real
 * node's containerd, as the DaemonSet does in a real cluster: its node's SandboxSnapshots only,
 * containerd's socket and ctr, the node's registry. It authenticates as SNAPSHOT_AGENT_USER,
 * bound here to the DaemonSet's own ClusterRole (infra/deploy/components/snapshots/rbac.yaml), so
 * the local cluster runs it with exactly the rights a deployment gives it. Its log is
 * logs/snapshot-agent.log; `down` stops it with the cluster's other processes.
 */
export async function startNodeSnapshotAgent(ctx: SnapshotAgentContext, node: RealNodeState): Promise<void> {
  const admin = new KubeConfig();
  admin.loadFromFile(join(ctx.clusterDir, "kubeconfig"));
  const role = parseAllDocuments(readFileSync(AGENT_RBAC, "utf8"))
    .map((d) => d.toJS() as KubernetesObject)
    .find((o) => o.kind === "ClusterRole");
  if (!role?.metadata?.name) throw new Error(`${AGENT_RBAC} holds no ClusterRole`);
  const binding = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: `${role.metadata.name}-local` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role.metadata.name },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: SNAPSHOT_AGENT_USER }],
  };
  await serverSideApply(admin, [role, binding], "agentbox-cluster");
  const kubeconfig = join(node.dir, "snapshot-agent.kubeconfig");
  writeKubeconfig(kubeconfig, ctx.server, ctx.caCert, ctx.agentToken, SNAPSHOT_AGENT_USER);
  const tmp = join(node.dir, "snapshot-spool");
  mkdirSync(tmp, { recursive: true });
  ctx.run("snapshot-agent", process.execPath, [
    AGENT_MAIN,
    `--kubeconfig=${kubeconfig}`,
    `--field-selector=spec.source.node=${node.name}`,
    `--containerd-address=${node.containerdSocket}`,
    `--ctr=${join(ctx.nodeBinDir, "ctr")}`,
    `--registry-name=${IMAGE_REGISTRY}`,
    `--registry-url=http://127.0.0.1:${node.registryPort}`,
    `--tmp-dir=${tmp}`,
    "--log-level=debug",
  ]);
}
