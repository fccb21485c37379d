// Node names only test/integration/snapshot-agent.test.ts's own agent handles. Every other name
// has an agent in the integration run (the real node's beside its kubelet, and the kwok nodes'
// in the global setup), so the global setup's kwok agent leaves these out.

/** AGENT_TEST_NODES: `own` is the test agent's node; `other` is a node no agent watches. */
export const AGENT_TEST_NODES = { own: "agent-test-node", other: "agent-test-other-node" } as const;
