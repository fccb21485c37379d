import type { EnvAutoscalingGroup } from "../../lib/crd/autoscaling.ts";
import { ENV_LABEL, SCALING_GROUP_LABEL } from "../../lib/crd/keys.ts";
import type { EnvClusterMember, SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";

/** envOf is SandboxEnv "e" of namespace "ns" with the given autoscaling groups (unit tests). */
export function envOf(...groups: EnvAutoscalingGroup[]): SandboxEnv {
  return {
    metadata: { name: "e", namespace: "ns" },
    spec: { templateRef: { name: "t" }, mode: "WarmPool", autoscaling: { groups } },
  } as SandboxEnv;
}

/** asMember is the pool labelled a member of envOf's Env, in scaling group `group`, as the Env stamps it. */
export function asMember(pool: SandboxPool, group: string): SandboxPool {
  const labels = { ...pool.metadata?.labels, [ENV_LABEL]: "e", [SCALING_GROUP_LABEL]: group };
  return { ...pool, metadata: { ...pool.metadata, labels } };
}

/**
 * envWithMembers is SandboxEnv "py" of namespace "ns" (uid, resourceVersion and generation as read
 * from the apiserver) on template "python", with `members` in cluster "local" and `extra` on its spec.
 */
export function envWithMembers(
  members: EnvClusterMember[],
  extra: Partial<SandboxEnv["spec"]> = {},
): SandboxEnv {
  return {
    metadata: { name: "py", namespace: "ns", uid: "env-uid", resourceVersion: "3", generation: 1 },
    spec: {
      templateRef: { name: "python" },
      mode: "WarmPool",
      clusters: [{ clusterID: "local", members }],
      ...extra,
    },
  } as SandboxEnv;
}
