// The kwok nodes' snapshot agent (issue #39, ADR 0045): kwok has no container runtime, so a pause
// of a kwok sandbox commits the envd stand-in's directory of its pod (stand-in-committer.ts). Run
// by `npm start` and the integration tests' setup beside the stand-in; the real node has its own
// agent (containerd's), started with it by `cluster up`.
import type { KubeConfig } from "@kubernetes/client-node";
import type { Committer } from "../../../functions/snapshots/committer.ts";
import { type SnapshotAgent, startSnapshotAgent } from "../../../functions/snapshots/snapshot-agent.ts";
import { nodeKubeTransport, nodeKubeWatch } from "../../../hosts/node/kube-transport.ts";
import { KubeClient } from "../../../lib/kube/client.ts";
import type { Log } from "../../../lib/util/log.ts";
import { REAL_NODE_NAME } from "../../cluster/real-node/real-node.ts";
import { IMAGE_REGISTRY } from "../../images/refs.ts";

/**
 * startKwokSnapshotAgent watches the snapshots of every node but the real node's (and those
 * `exclude` names) and commits them with the stand-in's committer.
 */
export function startKwokSnapshotAgent(
  kc: KubeConfig,
  committer: Committer,
  log: Log,
  exclude: readonly string[] = [],
): SnapshotAgent {
  return startSnapshotAgent({
    kube: new KubeClient(nodeKubeTransport(kc)),
    watch: nodeKubeWatch(kc),
    fieldSelector: [REAL_NODE_NAME, ...exclude].map((n) => `spec.source.node!=${n}`).join(","),
    committer,
    registry: IMAGE_REGISTRY,
    log,
    now: () => new Date(),
  });
}
