// The tick's hand-over of a snapshot whose node is gone (lib/snapshots/node-handover.ts decides):
// its facts are read from the apiserver (quorum reads, no cache), and the write is a PUT of the
// object at the version the sweep listed, so two hosts handing it over at once conflict instead of
// both writing, and a snapshot changed since is decided again at the next tick.
import type { V1Node, V1Pod } from "@kubernetes/client-node";
import { SANDBOX_POOL_LABEL } from "../../lib/crd/keys.ts";
import type { SandboxSnapshot } from "../../lib/crd/sandbox-snapshot.ts";
import { KubeError, orMissing } from "../../lib/kube/errors.ts";
import { awaitsAnyAgent, handOverCandidates, nodeHandOver } from "../../lib/snapshots/node-handover.ts";
import type { HostDeps } from "../host-deps.ts";
import { snapshotEvent } from "./snapshot-events.ts";

/**
 * NodeReads are one sweep's reads of Nodes and of pools' pods, each made once however many
 * snapshots ask (the snapshots of one gone node, or of one pool): fresh for that sweep, never kept
 * beyond it.
 */
export interface NodeReads {
  /** node is the Node, undefined when it does not exist (404). */
  node(name: string): Promise<V1Node | undefined>;
  /** poolPods are the pods labelled with the pool, in the namespace. */
  poolPods(namespace: string, pool: string): Promise<V1Pod[]>;
}

/** nodeReads starts a sweep's NodeReads. */
export function nodeReads(deps: Pick<HostDeps, "kube">): NodeReads {
  const nodes = new Map<string, Promise<V1Node | undefined>>();
  const pods = new Map<string, Promise<V1Pod[]>>();
  const once = <T>(map: Map<string, Promise<T>>, key: string, read: () => Promise<T>): Promise<T> => {
    let p = map.get(key);
    if (!p) {
      p = read();
      // A failed read is not remembered: the next snapshot asking reads again.
      p.catch(() => map.delete(key));
      map.set(key, p);
    }
    return p;
  };
  return {
    node: (name) => once(nodes, name, () => orMissing(deps.kube.getNode(name))),
    poolPods: (namespace, pool) =>
      once(
        pods,
        `${namespace}/${pool}`,
        async () => (await deps.kube.listPods(namespace, `${SANDBOX_POOL_LABEL}=${pool}`)).items,
      ),
  };
}

/**
 * handOverSnapshot hands a snapshot whose node is gone to a live node's agent (nodeHandOver), or
 * says once why it cannot (no Ready node runs its pool; the host may not read Nodes); true when it
 * wrote. `s` is the snapshot as the sweep listed it: its version is the write's precondition.
 */
export async function handOverSnapshot(
  deps: Pick<HostDeps, "kube" | "log" | "now" | "reporter" | "noticed">,
  s: SandboxSnapshot,
  reads: NodeReads,
): Promise<boolean> {
  if (!awaitsAnyAgent(s)) return false;
  const ns = s.metadata?.namespace ?? "";
  const from = s.spec.source.node;
  const sandboxId = s.spec.sandboxId;
  let decision: ReturnType<typeof nodeHandOver>;
  try {
    const sourceNode = await reads.node(from);
    if (sourceNode) return false;
    const poolPods = await reads.poolPods(ns, s.spec.pool);
    // One at a time: a pool may span many nodes, and this runs only while a node is gone.
    const nodes: V1Node[] = [];
    for (const name of handOverCandidates(s, poolPods)) {
      const n = await reads.node(name);
      if (n) nodes.push(n);
    }
    decision = nodeHandOver(s, { sourceNode, poolPods, nodes });
  } catch (e) {
    if (!(e instanceof KubeError && e.status === 403)) throw e;
    noticeOnce(deps, "snapshot-nodes-forbidden", {
      err: e.message,
      msg: "cannot tell whether a snapshot's node is gone: the host may not get nodes (apply components/snapshots)",
    });
    return false;
  }
  switch (decision.kind) {
    case "none":
      return false;
    case "stranded":
      noticeOnce(deps, `snapshot-stranded:${s.metadata?.uid ?? `${ns}/${sandboxId}`}`, {
        sandboxId,
        msg: `snapshot left where it is: ${decision.why}; it is handed over once one does`,
      });
      return false;
    case "hand-over":
      await deps.kube.replaceSnapshot(ns, decision.snapshot);
      deps.log.info({ sandboxId, from, to: decision.node }, "snapshot handed over: its node is gone");
      await snapshotEvent(
        deps,
        s,
        "Normal",
        "HandedOver",
        `node ${from} is gone; the snapshot agent of node ${decision.node} deletes its images`,
      );
      return true;
  }
}

/** noticeOnce logs a warning the first time this process meets `key` (HostDeps.noticed). */
function noticeOnce(
  deps: Pick<HostDeps, "log" | "noticed">,
  key: string,
  entry: { msg: string } & Record<string, string>,
): void {
  if (deps.noticed.has(key)) return;
  deps.noticed.add(key);
  const { msg, ...fields } = entry;
  deps.log.warn(fields, msg);
}
