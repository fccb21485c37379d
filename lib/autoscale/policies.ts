// The group's policies with every default filled in, how much one scale-up adds, and the member
// orders both the autoscaler and the router follow (seed: PoolScaleUpMode, EnvClusterMemberConfig).
import * as v from "valibot";
import {
  type EnvAutoscalingGroup,
  PoolScaleDownPolicy,
  type PoolScaleUpMode,
  PoolScaleUpPolicy,
} from "../crd/autoscaling.ts";
import type { EnvClusterMemberConfig } from "../crd/sandbox-env.ts";

/** GroupPolicies is one group's bounds and policies, every field present. */
export interface GroupPolicies {
  name: string;
  enabled: boolean;
  minReplicas: number;
  /** maxReplicas: undefined means no group ceiling. */
  maxReplicas: number | undefined;
  scaleUp: PoolScaleUpPolicy;
  scaleDown: PoolScaleDownPolicy;
}

/**
 * groupPolicies fills a group's policies with the CRD defaults. The apiserver stores them filled
 * in already; this makes an object built by hand (a test, an older stored Env) mean the same.
 */
export function groupPolicies(group: EnvAutoscalingGroup): GroupPolicies {
  return {
    name: group.name,
    enabled: group.enabled === true,
    minReplicas: group.minReplicas ?? 0,
    maxReplicas: group.maxReplicas,
    scaleUp: v.parse(PoolScaleUpPolicy, definedOnly(group.scaleUpPolicy)),
    scaleDown: v.parse(PoolScaleDownPolicy, definedOnly(group.scaleDownPolicy)),
  };
}

function definedOnly(o: object | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o ?? {}).filter(([, value]) => value !== undefined));
}

/**
 * growth is how many replicas one scale-up adds to a group of `current`, as the seed's modes say:
 * Conservative +1, Default +max(1, ceil(current/2)), Aggressive up to min(2×current, max). Every
 * mode adds at least one, so a group at zero can wake.
 */
export function growth(mode: PoolScaleUpMode, current: number, max: number | undefined): number {
  if (mode === "Conservative") return 1;
  if (mode === "Default") return Math.max(1, Math.ceil(current / 2));
  const doubled = max === undefined ? 2 * current : Math.min(2 * current, max);
  return Math.max(1, doubled - current);
}

/** effectiveScaleUpPriority: scaleUpPriority when set, else priority (lower scales up first). */
export function effectiveScaleUpPriority(config: EnvClusterMemberConfig | undefined): number {
  return config?.scaleUpPriority ?? config?.priority ?? 0;
}

/** effectiveScaleDownPriority: scaleDownPriority when set, else priority (higher shrinks first). */
export function effectiveScaleDownPriority(config: EnvClusterMemberConfig | undefined): number {
  return config?.scaleDownPriority ?? config?.priority ?? 0;
}

/** MemberKey is what the orders compare: the member's config, cluster and name. */
export interface MemberKey {
  name: string;
  clusterId: string;
  config?: EnvClusterMemberConfig | undefined;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** byScaleUpOrder: lowest EffectiveScaleUpPriority first; ties by clusterID, then name. */
export function byScaleUpOrder(a: MemberKey, b: MemberKey): number {
  return (
    effectiveScaleUpPriority(a.config) - effectiveScaleUpPriority(b.config) ||
    compareText(a.clusterId, b.clusterId) ||
    compareText(a.name, b.name)
  );
}
