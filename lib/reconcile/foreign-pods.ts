// A Pod that carries a pool's label without the pool controlling it is ignored (pod-ownership.ts)
// and said once: one Warning Event on the pool per such Pod. Which Pods were said is kept on the
// pool itself (FOREIGN_PODS_ANNOTATION: their uids), every change a patch tested against the
// value the run read, so of repeated or concurrent runs exactly one makes each addition, and the
// executor emits the Event only after that write succeeded (as status Events ride on their write).
import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { type Action, isTerminating, poolTarget, testVersion } from "../kube/action.ts";
import { escapePointer, type JsonPatchOp } from "../kube/json-patch.ts";
import { foreignPodEvent, type PoolEventIntent } from "../pool/pool-events.ts";

/** FOREIGN_PODS_ANNOTATION lists, comma-separated, the uids of the foreign Pods already reported. */
export const FOREIGN_PODS_ANNOTATION = "agentbox.navix.sh/foreign-pods";

/**
 * MAX_REPORTED_FOREIGN_PODS bounds that list (and so the annotation's size): Pods beyond it are
 * reported once earlier ones are gone.
 */
export const MAX_REPORTED_FOREIGN_PODS = 50;

const PATH = `/metadata/annotations/${escapePointer(FOREIGN_PODS_ANNOTATION)}`;

/**
 * planForeignPods reports the pool's foreign Pods that were not reported yet, one action (and
 * Warning) each, oldest name first, and drops the uids of Pods that are gone from the list; the
 * Pods themselves are never written. Each action tests the annotation value the previous one
 * left (the first: the value read, or the pool's resourceVersion while there is none), so a run
 * that lost to another writes nothing. A pool being deleted gets none.
 */
export function planForeignPods(pool: SandboxPool, foreign: readonly V1Pod[]): Action[] {
  if (isTerminating(pool)) return [];
  const read = pool.metadata?.annotations?.[FOREIGN_PODS_ANNOTATION];
  const present = new Map<string, string>();
  for (const pod of foreign) if (pod.metadata?.uid) present.set(pod.metadata.uid, pod.metadata.name ?? "");
  const said = new Set((read ?? "").split(",").filter((uid) => present.has(uid)));
  const unsaid = [...present]
    .filter(([uid]) => !said.has(uid))
    .sort(([, a], [, b]) => (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, Math.max(0, MAX_REPORTED_FOREIGN_PODS - said.size));
  const actions: Action[] = [];
  let before = read;
  const write = (why: string, event?: PoolEventIntent) => {
    const value = [...said].sort().join(",");
    if (value === (before ?? "")) return;
    const patch: JsonPatchOp[] =
      before === undefined
        ? [
            testVersion(pool),
            ...(pool.metadata?.annotations
              ? []
              : [{ op: "add" as const, path: "/metadata/annotations", value: {} }]),
          ]
        : [{ op: "test", path: PATH, value: before }];
    patch.push(value === "" ? { op: "remove", path: PATH } : { op: "add", path: PATH, value });
    actions.push({
      target: poolTarget(pool),
      why,
      write: { op: "patch", patch },
      ...(event ? { event } : {}),
    });
    before = value === "" ? undefined : value;
  };
  for (const [uid, name] of unsaid) {
    said.add(uid);
    write(`report foreign pod ${name}`, foreignPodEvent({ name, uid }, pool.metadata?.uid ?? ""));
  }
  write("forget foreign pods that are gone");
  return actions;
}
