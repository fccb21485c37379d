import type { EnvAutoscalingGroup } from "../../lib/api/autoscaling.ts";
import { ENV_LABEL, SCALING_GROUP_LABEL } from "../../lib/api/keys.ts";
import type { SandboxEnv } from "../../lib/api/sandbox-env.ts";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";

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
