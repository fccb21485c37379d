// A snapshot whose node is gone is not stranded (review finding M5). Only the agent of
// spec.source.node acts on a snapshot (the admission policy holds each agent to its own node), so a
// node deleted (scaled down, failed) would leave its snapshots' images forever: a deleted snapshot
// keeping its finalizer, stale images never deleted. The tick's sweep hands such a snapshot over to
// a live node's agent by rewriting spec.source.node. Pure: the snapshot and the apiserver's answers
// about nodes and the pool's pods (functions/snapshots/hand-over-snapshot.ts reads and writes).
import type { V1Node, V1Pod } from "@kubernetes/client-node";
import { SANDBOX_POOL_LABEL } from "../crd/keys.ts";
import type { SandboxSnapshot } from "../crd/sandbox-snapshot.ts";
import { isTerminating } from "../kube/action.ts";
import { sha256Hex } from "../util/sha256.ts";
import { snapshotWork } from "./agent-work.ts";

/**
 * NodeHandOver is the sweep's write for a snapshot whose node may be gone: none; `hand-over`, the
 * object with spec.source.node rewritten to `node` (a PUT at the version it was read); or
 * `stranded`, why no live node can take it (left, to try again at the next tick).
 */
export type NodeHandOver =
  | { kind: "none" }
  | { kind: "hand-over"; node: string; snapshot: SandboxSnapshot }
  | { kind: "stranded"; why: string };

/** NodeFacts are the apiserver's answers a hand-over is decided on, all read fresh (no cache). */
export interface NodeFacts {
  /** sourceNode is spec.source.node's Node, undefined when its GET answered 404. */
  sourceNode: V1Node | undefined;
  /** poolPods are the pods labelled with the snapshot's pool, in its namespace. */
  poolPods: readonly V1Pod[];
  /** nodes are the Nodes of handOverCandidates that exist (a 404 is left out). */
  nodes: readonly V1Node[];
}

/**
 * awaitsAnyAgent: the snapshot waits for agent work that any node's agent can do, which is never a
 * commit (only the node that runs the container can commit it): the deletion of a deleted
 * snapshot's images (any phase: an agent only ever finalizes a deleting snapshot, so a rewrite of
 * its node starts no commit), or of a paused, resuming or resumed one's stale images (whose
 * generation the agent has answered, so the rewrite's new generation is no new pause either).
 * A Committing snapshot is never handed over: its pause is abandoned by the sweep once its pod
 * is gone (abandonPause), and only then, deleted or back at Resumed, is it another agent's.
 */
export function awaitsAnyAgent(s: SandboxSnapshot): boolean {
  const work = snapshotWork(s).kind;
  return work === "finalize" || work === "remove-stale";
}

/**
 * handOverCandidates are the nodes a hand-over may choose from, to be read: those running a live
 * pod of the snapshot's pool (in its namespace), where the pool's sandboxes run and so the
 * snapshot agent does, other than the snapshot's own; sorted, each once.
 */
export function handOverCandidates(s: SandboxSnapshot, poolPods: readonly V1Pod[]): string[] {
  const namespace = s.metadata?.namespace;
  const names = poolPods
    .filter(
      (p) =>
        p.metadata?.namespace === namespace &&
        p.metadata?.labels?.[SANDBOX_POOL_LABEL] === s.spec.pool &&
        !isTerminating(p),
    )
    .map((p) => p.spec?.nodeName ?? "")
    .filter((n) => n !== "" && n !== s.spec.source.node);
  return [...new Set(names)].sort();
}

/** isReadyNode: the Node reports Ready=True and is not being deleted. */
function isReadyNode(node: V1Node): boolean {
  if (isTerminating(node)) return false;
  return node.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/**
 * nodeHandOver decides whether a snapshot is handed over: only one awaiting work any agent can do
 * (awaitsAnyAgent) whose spec.source.node is gone (its GET answered 404: a node that is merely
 * NotReady may come back with its agent). It goes to one of the Ready nodes among its
 * handOverCandidates, chosen by a hash of the snapshot's namespace and name over their sorted
 * names: every host deciding on the same facts picks the same node, and the snapshots of a gone
 * node spread over the pool's nodes. No such node: stranded, until the pool runs somewhere.
 */
export function nodeHandOver(s: SandboxSnapshot, facts: NodeFacts): NodeHandOver {
  if (!awaitsAnyAgent(s) || facts.sourceNode) return { kind: "none" };
  const candidates = new Set(handOverCandidates(s, facts.poolPods));
  const ready = facts.nodes
    .filter((n) => candidates.has(n.metadata?.name ?? "") && isReadyNode(n))
    .map((n) => n.metadata?.name ?? "");
  const names = [...new Set(ready)].sort();
  if (names.length === 0)
    return {
      kind: "stranded",
      why: `node ${s.spec.source.node} is gone and no Ready node runs a pod of pool ${s.spec.pool}`,
    };
  const key = `${s.metadata?.namespace ?? ""}/${s.metadata?.name ?? ""}`;
  const node = names[Number.parseInt(sha256Hex(key).slice(0, 8), 16) % names.length] ?? "";
  return {
    kind: "hand-over",
    node,
    snapshot: { ...s, spec: { ...s.spec, source: { ...s.spec.source, node } } },
  };
}
