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

/**
 * SNAPSHOT_AGENT_GROUP is the group of node-side snapshot agents that authenticate as users (a
 * static token, a client certificate) rather than as the DaemonSet's ServiceAccount.
 */
export const SNAPSHOT_AGENT_GROUP = "agentbox:snapshot-agents";

/**
 * snapshotAgentUser is a node's snapshot agent as the local apiserver knows it (tokens.csv, in
 * SNAPSHOT_AGENT_GROUP). A static token carries no extra, so the node is in the name, as the
 * kubelet's `system:node:<name>`: the admission policy of infra/deploy/components/snapshots reads
 * it from there and lets the agent write only that node's SandboxSnapshots.
 */
export const snapshotAgentUser = (node: string) => `agentbox:snapshot-agent:${node}`;

const COMPONENT = new URL("../../deploy/components/snapshots/", import.meta.url);
const AGENT_MAIN = fileURLToPath(new URL("../../../hosts/snapshot-agent/main.ts", import.meta.url));
/** AGENT_RBAC holds the agent's ClusterRole, the same one the DaemonSet's ServiceAccount gets. */
const AGENT_RBAC = fileURLToPath(new URL("rbac.yaml", COMPONENT));
/** AGENT_POLICY holds the admission policy (and its binding) keeping each agent to its own node. */
export const AGENT_POLICY = fileURLToPath(new URL("admission-policy.yaml", COMPONENT));

/** objectsOf reads every object of a YAML file. */
const objectsOf = (file: string) =>
  parseAllDocuments(readFileSync(file, "utf8"))
    .map((d) => d.toJS() as KubernetesObject)
    .filter((o) => o?.kind);

/** snapshotAgentKubeconfig is the real node's agent's kubeconfig: its own token, its own user. */
export const snapshotAgentKubeconfig = (node: RealNodeState) => join(node.dir, "snapshot-agent.kubeconfig");

/** SnapshotAgentContext is what the real node's start lends the agent's. */
export interface SnapshotAgentContext {
  clusterDir: string;
  server: string;
  caCert: string;
  nodeBinDir: string;
  /** agentToken is snapshotAgentUser(node)'s bearer token (up writes it into tokens.csv). */
  agentToken: string;
  run: (name: string, bin: string, args: string[]) => Started;
}

/**
 * startNodeSnapshotAgent runs the snapshot agent (hosts/snapshot-agent/main.ts) beside the real
 * node's containerd, as the DaemonSet does in a real cluster: its node's SandboxSnapshots only,
 * containerd's socket and ctr, the node's registry. It authenticates as snapshotAgentUser(node)
 * in SNAPSHOT_AGENT_GROUP, bound here to the DaemonSet's own ClusterRole and held to its own node
 * by the component's admission policy (infra/deploy/components/snapshots/rbac.yaml and
 * admission-policy.yaml, applied from those files), so the local cluster runs it with exactly the
 * rights a deployment gives it. Its log is logs/snapshot-agent.log; `down` stops it with the
 * cluster's other processes.
 */
export async function startNodeSnapshotAgent(ctx: SnapshotAgentContext, node: RealNodeState): Promise<void> {
  const admin = new KubeConfig();
  admin.loadFromFile(join(ctx.clusterDir, "kubeconfig"));
  const role = objectsOf(AGENT_RBAC).find((o) => o.kind === "ClusterRole");
  if (!role?.metadata?.name) throw new Error(`${AGENT_RBAC} holds no ClusterRole`);
  const binding = {
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRoleBinding",
    metadata: { name: `${role.metadata.name}-local` },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role.metadata.name },
    subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: SNAPSHOT_AGENT_GROUP }],
  };
  const policy = objectsOf(AGENT_POLICY);
  if (!policy.some((o) => o.kind === "ValidatingAdmissionPolicyBinding"))
    throw new Error(`${AGENT_POLICY} holds no ValidatingAdmissionPolicyBinding`);
  await serverSideApply(admin, [...policy, role, binding], "agentbox-cluster");
  const kubeconfig = snapshotAgentKubeconfig(node);
  writeKubeconfig(kubeconfig, ctx.server, ctx.caCert, ctx.agentToken, snapshotAgentUser(node.name));
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
