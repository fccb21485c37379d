// Node names no agent of the integration run handles but the tests' own (snapshot-agent.test.ts's
// agent, snapshot-agent-policy.test.ts's agent identities, snapshot-agent-registry.test.ts's
// agents; pause-node-gone.test.ts's node that is gone has none). Every other name has an agent in
// the run (the real node's beside its kubelet, and the kwok nodes' in the global setup), so the
// global setup's kwok agent leaves these out. And the snapshot those tests write, as a pause would.
import { randomBytes } from "node:crypto";
import { type SandboxSnapshot, SNAPSHOT_FINALIZER } from "../../../lib/crd/sandbox-snapshot.ts";

/**
 * AGENT_TEST_NODES: `own` is the test agent's node; `other` is a node no agent watches; `policy`
 * is another no agent watches, the node of the agent identities snapshot-agent-policy.test.ts
 * makes (their writes are the test's own); `registry` is snapshot-agent-registry.test.ts's agents';
 * `noDeletes` is snapshot-agent-no-deletes.test.ts's agent (a registry that refuses deletes);
 * `gone` is pause-node-gone.test.ts's node that no longer exists (no Node, no agent), whose
 * snapshots only the sweep's hand-over gets an agent for.
 */
export const AGENT_TEST_NODES = {
  own: "agent-test-node",
  other: "agent-test-other-node",
  policy: "agent-policy-node",
  registry: "agent-registry-test-node",
  noDeletes: "agent-no-deletes-node",
  gone: "agent-gone-node",
} as const;

/**
 * agentTestSnapshot is SandboxSnapshot `id` as a pause writes it (no status: Committing): pod
 * `pool-a-<id>` of pool-a on `node`, one container `sandbox` (image img:1), with the agent's
 * finalizer when asked.
 */
export function agentTestSnapshot(
  id: string,
  node: string,
  opts: { finalizer?: boolean; containerID?: string } = {},
): SandboxSnapshot {
  return {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxSnapshot",
    metadata: { name: id, ...(opts.finalizer ? { finalizers: [SNAPSHOT_FINALIZER] } : {}) },
    spec: {
      sandboxId: id,
      pool: "pool-a",
      source: {
        node,
        pod: `pool-a-${id}`,
        podUID: randomBytes(8).toString("hex"),
        containers: [{ name: "sandbox", containerID: opts.containerID ?? "containerd://c1", image: "img:1" }],
      },
      claim: { containerImages: { sandbox: "img:1" }, team: "team-a" },
    },
  };
}
