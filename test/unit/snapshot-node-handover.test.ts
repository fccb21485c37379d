import type { V1Node, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { type SandboxSnapshot, SNAPSHOT_FINALIZER, SNAPSHOT_PHASE } from "../../lib/crd/sandbox-snapshot.ts";
import { needsCommit, snapshotWork } from "../../lib/snapshots/agent-work.ts";
import { awaitsAnyAgent, handOverCandidates, nodeHandOver } from "../../lib/snapshots/node-handover.ts";
import { runningPod, type SnapshotOptions, snapshot } from "../support/snapshot-fixtures.ts";

// A snapshot whose node is gone is handed over to a live node's agent (review finding M5): which
// snapshots may be (never one whose commit is pending), which node takes it, and that the rewrite
// is never taken for a new pause by the agent that gets it.

const { COMMITTING, COMMITTED, PAUSED, RESUMING, RESUMED, FAILED } = SNAPSHOT_PHASE;
const STALE = { "sandbox:g1": "registry.agentbox.test/agentbox-snapshots/team-a/sbx-1/sandbox:g1@sha256:aa" };

/**
 * deleted is a snapshot being deleted with the agent's finalizer still on, whose pause and end the
 * history holds (until then it waits for the hosts, not an agent).
 */
function deleted(phase: Parameters<typeof snapshot>[0], o: SnapshotOptions = {}): SandboxSnapshot {
  const s = snapshot(phase, { recorded: { paused: 1, ended: true }, ...o, deleting: true });
  return { ...s, metadata: { ...s.metadata, finalizers: [SNAPSHOT_FINALIZER] } };
}

/** node is a Node named `name`, Ready unless said otherwise. */
function node(name: string, o: { ready?: boolean; deleting?: boolean } = {}): V1Node {
  return {
    metadata: { name, ...(o.deleting ? { deletionTimestamp: new Date("2026-12-02T09:00:00Z") } : {}) },
    status: { conditions: [{ type: "Ready", status: o.ready === false ? "False" : "True" }] },
  };
}

/** poolPod is an idle pod of the fixtures' pool ("python", namespace team-a) on `nodeName`. */
function poolPod(
  nodeName: string,
  o: { terminating?: boolean; pool?: string; namespace?: string } = {},
): V1Pod {
  const pod = runningPod({
    id: "",
    phase: "idle",
    terminating: o.terminating ?? false,
    ...(o.pool ? { labels: { "agentbox.navix.sh/sandbox-pool": o.pool } } : {}),
  });
  return {
    ...pod,
    metadata: { ...pod.metadata, namespace: o.namespace ?? "team-a" },
    spec: { ...pod.spec, containers: pod.spec?.containers ?? [], nodeName },
  };
}

/** named is snapshot `s` under another name (another sandbox's). */
const named = (s: SandboxSnapshot, name: string): SandboxSnapshot => ({
  ...s,
  metadata: { ...s.metadata, name },
  spec: { ...s.spec, sandboxId: name },
});

/** bumped is the object as the apiserver stores a spec change: its generation one more. */
const bumped = (s: SandboxSnapshot): SandboxSnapshot => ({
  ...s,
  metadata: { ...s.metadata, generation: (s.metadata?.generation ?? 1) + 1 },
});

describe("awaitsAnyAgent", () => {
  it.each<[string, SandboxSnapshot]>([
    ["deleted, Paused", deleted(PAUSED, { images: { sandbox: "x" } })],
    ["deleted, Resumed", deleted(RESUMED)],
    ["deleted, Failed", deleted(FAILED)],
    ["deleted while Committing (an abandoned pause)", deleted(COMMITTING, { observedGeneration: 0 })],
    ["deleted with no phase yet", deleted(undefined, { observedGeneration: 0 })],
    ["deleted, Committed", deleted(COMMITTED)],
    ["Paused with stale images", snapshot(PAUSED, { staleImages: STALE })],
    ["Resuming with stale images", snapshot(RESUMING, { staleImages: STALE })],
    ["Resumed with stale images", snapshot(RESUMED, { staleImages: STALE })],
  ])("%s: yes", (_name, s) => {
    expect(awaitsAnyAgent(s)).toBe(true);
  });

  it.each<[string, SandboxSnapshot]>([
    ["Committing, its commit pending", snapshot(COMMITTING, { observedGeneration: 0, staleImages: STALE })],
    ["no phase yet, its commit pending", snapshot(undefined, { observedGeneration: 0 })],
    ["Committed with stale images (its pause completes first)", snapshot(COMMITTED, { staleImages: STALE })],
    ["Failed with stale images (its pause is undone first)", snapshot(FAILED, { staleImages: STALE })],
    ["Paused, nothing stale", snapshot(PAUSED)],
    ["deleted, its finalizer gone", snapshot(PAUSED, { deleting: true })],
    ["deleted, Paused, its end not in the history yet", deleted(PAUSED, { recorded: { paused: 1 } })],
  ])("%s: no", (_name, s) => {
    expect(awaitsAnyAgent(s)).toBe(false);
  });
});

describe("handOverCandidates", () => {
  it("are the other nodes running a live pod of the snapshot's pool in its namespace, sorted, each once", () => {
    const pods = [
      poolPod("n3"),
      poolPod("n2"),
      poolPod("n3"),
      poolPod("n1"),
      poolPod("n4", { terminating: true }),
      poolPod("n5", { pool: "other" }),
      poolPod("n6", { namespace: "team-b" }),
      poolPod(""),
    ];
    expect(handOverCandidates(snapshot(PAUSED), pods)).toEqual(["n2", "n3"]);
  });
});

describe("nodeHandOver", () => {
  const s = deleted(PAUSED, { images: { sandbox: "x" } });
  const pods = [poolPod("n2"), poolPod("n3"), poolPod("n4"), poolPod("n5")];
  const nodes = [node("n2", { ready: false }), node("n3"), node("n4"), node("n5", { deleting: true })];

  it("does nothing while the snapshot's node exists, Ready or not", () => {
    for (const sourceNode of [node("n1"), node("n1", { ready: false })])
      expect(nodeHandOver(s, { sourceNode, poolPods: pods, nodes })).toEqual({ kind: "none" });
  });

  it("does nothing for a snapshot no agent has to act on, or whose commit is pending, its node gone", () => {
    for (const other of [snapshot(PAUSED), snapshot(COMMITTING, { observedGeneration: 0 })])
      expect(nodeHandOver(other, { sourceNode: undefined, poolPods: pods, nodes })).toEqual({ kind: "none" });
  });

  it("rewrites spec.source.node, and nothing else, to a Ready node of the pool that is not being deleted", () => {
    const d = nodeHandOver(s, { sourceNode: undefined, poolPods: pods, nodes });
    if (d.kind !== "hand-over") throw new Error(`expected a hand-over, got ${JSON.stringify(d)}`);
    expect(["n3", "n4"]).toContain(d.node);
    expect(d.snapshot).toEqual({ ...s, spec: { ...s.spec, source: { ...s.spec.source, node: d.node } } });
    // The version it was read at stays: the write is preconditioned on it.
    expect(d.snapshot.metadata?.resourceVersion).toBe("7");
  });

  it("picks the same node whatever order the facts come in, and spreads snapshots over the nodes", () => {
    const pick = (x: SandboxSnapshot, ps: V1Pod[], ns: V1Node[]) => {
      const d = nodeHandOver(x, { sourceNode: undefined, poolPods: ps, nodes: ns });
      return d.kind === "hand-over" ? d.node : d.kind;
    };
    const many = [node("n2"), node("n3"), node("n4"), node("n5")];
    const chosen = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const x = named(s, `sbx-${i}`);
      const first = pick(x, pods, many);
      expect(pick(x, [...pods].reverse(), [...many].reverse())).toBe(first);
      chosen.add(first);
    }
    expect([...chosen].every((n) => ["n2", "n3", "n4", "n5"].includes(n))).toBe(true);
    expect(chosen.size).toBeGreaterThan(1);
  });

  it("leaves it stranded, saying why, when no Ready node runs the pool", () => {
    const why = "node n1 is gone and no Ready node runs a pod of pool python";
    for (const [ps, ns] of [
      [[], []],
      [pods, [node("n2", { ready: false }), node("n5", { deleting: true })]],
      // A Ready node that runs no pod of the pool is not the pool's (no agent there, maybe).
      [[poolPod("n2")], [node("n9")]],
    ] as [V1Pod[], V1Node[]][])
      expect(nodeHandOver(s, { sourceNode: undefined, poolPods: ps, nodes: ns })).toEqual({
        kind: "stranded",
        why,
      });
  });

  it("is never taken for a new pause: the agent that gets it deletes images and commits nothing", () => {
    const cases: [SandboxSnapshot, string][] = [
      [deleted(PAUSED, { images: { sandbox: "x" } }), "finalize"],
      [deleted(COMMITTING, { observedGeneration: 0 }), "finalize"],
      [deleted(undefined, { observedGeneration: 0 }), "finalize"],
      [deleted(FAILED), "finalize"],
      [snapshot(PAUSED, { staleImages: STALE }), "remove-stale"],
      [snapshot(RESUMING, { staleImages: STALE }), "remove-stale"],
      [snapshot(RESUMED, { staleImages: STALE }), "remove-stale"],
    ];
    for (const [x, work] of cases) {
      const d = nodeHandOver(x, { sourceNode: undefined, poolPods: pods, nodes });
      if (d.kind !== "hand-over") throw new Error(`expected a hand-over, got ${JSON.stringify(d)}`);
      // The apiserver numbers the rewritten spec as a new generation, which no agent answered.
      const stored = bumped(d.snapshot);
      expect(stored.status?.observedGeneration).not.toBe(stored.metadata?.generation);
      expect(needsCommit(stored) && !stored.metadata?.deletionTimestamp).toBe(false);
      expect(snapshotWork(stored).kind).toBe(work);
    }
  });
});
