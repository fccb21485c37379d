// E2B's answers read a sandbox's pod (its template id, resources and network settings). A paused
// sandbox holds none, so its answers read the pod it will be again: the annotations its claim
// writes back on resume and the containers of its pool's template.
import type { V1Container, V1Pod } from "@kubernetes/client-node";
import { pausedAnnotations } from "../claims/paused-view.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { SandboxSnapshot } from "../crd/sandbox-snapshot.ts";

/**
 * pausedPod is the pod a paused sandbox will be, as far as E2B's answers read one: its namespace,
 * the annotations its claim keeps (the E2B template id, the network settings) and the containers
 * of its pool's template (its resources; none when the pool is gone: E2B's defaults then).
 */
export function pausedPod(snapshot: SandboxSnapshot, pool: SandboxPool | undefined): V1Pod {
  return {
    metadata: {
      ...(snapshot.metadata?.namespace ? { namespace: snapshot.metadata.namespace } : {}),
      annotations: pausedAnnotations(snapshot),
    },
    spec: { containers: templateContainers(pool) },
  };
}

/** templateContainers are the containers of a pool's pod template (it is a preserved object). */
function templateContainers(pool: SandboxPool | undefined): V1Container[] {
  const spec: unknown = pool?.spec.template?.spec;
  const containers =
    typeof spec === "object" && spec !== null ? (spec as { containers?: unknown }).containers : undefined;
  return Array.isArray(containers) ? (containers as V1Container[]) : [];
}
