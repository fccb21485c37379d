// One Env run's autoscaler writes: the decision of every enabled group in the local segment turned
// into one replicas patch on the Env (under its spec as read) and one status.autoscaling patch
// per pool that changed (under the block as read). The Env patch goes first and the pool patches
// only after it landed (see ADR 0017), so two racing runs never both scale.
import type { V1Pod } from "@kubernetes/client-node";
import type { PoolAutoScalingStatus } from "../crd/autoscaling.ts";
import { SANDBOX_POOL_LABEL } from "../crd/keys.ts";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { type Action, envTarget, isTerminating, poolTarget, testSpec } from "../kube/action.ts";
import { type JsonPatchOp, mapOps } from "../kube/json-patch.ts";
import { localMembers, scalingGroupOf } from "../membership/env-members.ts";
import { foreignMemberPool } from "../membership/env-ownership.ts";
import { ownedBy } from "../membership/pod-ownership.ts";
import { servedMarks } from "../pool/pending-requests.ts";
import { decide } from "./decide.ts";
import type { DecideOptions, ScaleChange } from "./group-decision.ts";
import { encodeGroupStamps, GROUP_STAMPS_ANNOTATION, groupStampsOf, stampKey } from "./group-stamps.ts";
import { loadMember } from "./member-load.ts";

/** AutoscaleInput is what the autoscaler reads: the Env, its pools and their Pods. */
export interface AutoscaleInput {
  env: SandboxEnv;
  pools: readonly SandboxPool[];
  pods: readonly V1Pod[];
}

/** GroupChange is one member's replicas move, with its group. */
export type GroupChange = ScaleChange & { group: string };

/** AutoscalePlan is the Env write first, then the pool writes, and what moved. */
export interface AutoscalePlan {
  /** envWrite patches the members' replicas; undefined when none changes. */
  envWrite?: Action;
  /** poolWrites patch status.autoscaling; applied only when envWrite (if any) landed. */
  poolWrites: Action[];
  changes: GroupChange[];
}

/** enabledGroups: the names of the Env's enabled autoscaling groups. */
export function enabledGroups(env: SandboxEnv): Set<string> {
  return new Set((env.spec.autoscaling?.groups ?? []).filter((g) => g.enabled).map((g) => g.name));
}

/** autoscaledMembers: the names of the local members in an enabled group (whose Pods the autoscaler reads). */
export function autoscaledMembers(env: SandboxEnv, clusterId: string): string[] {
  const enabled = enabledGroups(env);
  return localMembers(env, clusterId)
    .filter((m) => enabled.has(scalingGroupOf(m)))
    .map((m) => m.name);
}

function replicasOps(
  env: SandboxEnv,
  clusterId: string,
  replicas: ReadonlyMap<string, number>,
): JsonPatchOp[] {
  const c = env.spec.clusters?.findIndex((s) => s.clusterID === clusterId) ?? -1;
  const members = localMembers(env, clusterId);
  return members.flatMap((m, j): JsonPatchOp[] => {
    const value = replicas.get(m.name);
    if (value === undefined || c < 0) return [];
    const base = `/spec/clusters/${c}/members/${j}`;
    return m.spec
      ? [{ op: "add", path: `${base}/spec/replicas`, value }]
      : [{ op: "add", path: `${base}/spec`, value: { replicas: value } }];
  });
}

function envAction(env: SandboxEnv, ops: JsonPatchOp[], changes: readonly GroupChange[]): Action {
  const text = changes.map((c) => `${c.member} ${c.from}→${c.to} (${c.group}: ${c.reason})`).join(", ");
  const up = changes.some((c) => c.direction === "up");
  const down = changes.some((c) => c.direction === "down");
  return {
    target: envTarget(env),
    why: `autoscale: ${text}`,
    write: { op: "patch", patch: [...testSpec(env), ...ops] },
    event: {
      type: "Normal",
      reason: up && down ? "Rescaled" : up ? "ScaledUp" : "ScaledDown",
      action: "Scale",
      note: `autoscaler: ${text}`,
    },
  };
}

/**
 * bookAction writes a pool's status.autoscaling (null removes it). Its precondition is the block
 * as read (and the pool's uid), not the pool's resourceVersion: the pool step rewrites the rest of
 * the status on every Pod transition, and that must not make the autoscaler's bookkeeping lose.
 */
function bookAction(pool: SandboxPool, next: PoolAutoScalingStatus | null): Action {
  const before = pool.status?.autoscaling;
  const saturatedNow =
    next?.lastScaleUpAttemptResult !== undefined &&
    next.lastScaleUpAttemptResult !== "Enough" &&
    (next.lastScaleUpAttemptTime !== before?.lastScaleUpAttemptTime ||
      next.lastScaleUpAttemptResult !== before?.lastScaleUpAttemptResult);
  const path = "/status/autoscaling";
  const guard: JsonPatchOp[] = [
    { op: "test", path: "/metadata/uid", value: pool.metadata?.uid ?? "" },
    ...(before !== undefined ? [{ op: "test" as const, path, value: before }] : []),
  ];
  const ops: JsonPatchOp[] = next === null ? [{ op: "remove", path }] : [{ op: "add", path, value: next }];
  // A pool read without any status gets a merge patch: a JSON patch would have to add the whole
  // status, replacing whatever the pool step wrote since the read.
  const write: Action["write"] =
    next !== null && !pool.status
      ? { op: "status", status: { autoscaling: next } }
      : { op: "patch-status", patch: [...guard, ...ops] };
  return {
    target: poolTarget(pool),
    why: next === null ? "not autoscaled: remove status.autoscaling" : "autoscaler bookkeeping",
    write,
    ...(saturatedNow
      ? {
          event: {
            type: "Warning" as const,
            reason: `ScaleUp${next?.lastScaleUpAttemptResult}`,
            action: "Scale",
            note: `scale-up held back for saturationCooldownSeconds: ${next?.scaleUpErrorMessage ?? ""}`,
          },
        }
      : {}),
  };
}

/**
 * planAutoscale decides every enabled group of the Env's local segment (decide) and plans the
 * writes. Pools of local members outside an enabled group lose a stale status.autoscaling (the
 * block is the autoscaler's and says nothing when it does not run). An Env being deleted gets none.
 * `options` go to every decide (the host's, e.g. the bench's cooldownMode).
 */
export function planAutoscale(
  input: AutoscaleInput,
  clusterId: string,
  now: Date,
  options: DecideOptions = {},
): AutoscalePlan {
  const { env, pools, pods } = input;
  const plan: AutoscalePlan = { poolWrites: [], changes: [] };
  if (isTerminating(env)) return plan;
  // Only pools that serve the Env are read or written: another Env's pool (or a standalone one)
  // that carries a member's name is the Env status's Inconsistent, never scaled or booked here.
  const poolByName = new Map(
    pools.filter((p) => !foreignMemberPool(p, env)).map((p) => [p.metadata?.name ?? "", p]),
  );
  // Only a pool's own Pods are its supply (and carry its served marks): one that merely carries
  // the pool label is ignored (lib/membership/pod-ownership.ts).
  const podsByPool = new Map<string, V1Pod[]>();
  const owned: V1Pod[] = [];
  for (const pod of pods) {
    const name = pod.metadata?.labels?.[SANDBOX_POOL_LABEL] ?? "";
    const pool = poolByName.get(name);
    if (!pool || !ownedBy(pod, pool)) continue;
    owned.push(pod);
    podsByPool.set(name, [...(podsByPool.get(name) ?? []), pod]);
  }
  const members = localMembers(env, clusterId);
  const enabled = enabledGroups(env);
  const served = servedMarks(owned);
  const replicas = new Map<string, number>();
  const stamps = groupStampsOf(env);
  let stamped = false;
  for (const group of env.spec.autoscaling?.groups ?? []) {
    if (!enabled.has(group.name)) continue;
    const loads = members
      .filter((m) => scalingGroupOf(m) === group.name)
      .map((m) =>
        loadMember(m, clusterId, poolByName.get(m.name), podsByPool.get(m.name) ?? [], now, served),
      );
    const key = stampKey(clusterId, group.name);
    const decision = decide({ group, members: loads, stamp: stamps.get(key) }, now, options);
    if (decision.stamp) {
      stamps.set(key, decision.stamp);
      stamped = true;
    }
    for (const [name, value] of decision.replicas) replicas.set(name, value);
    plan.changes.push(...decision.changes.map((c) => ({ ...c, group: group.name })));
    for (const [name, next] of decision.autoscaling) {
      const pool = poolByName.get(name);
      if (pool) plan.poolWrites.push(bookAction(pool, next));
    }
  }
  for (const m of members) {
    const pool = poolByName.get(m.name);
    if (pool && !isTerminating(pool) && !enabled.has(scalingGroupOf(m)) && pool.status?.autoscaling)
      plan.poolWrites.push(bookAction(pool, null));
  }
  const ops = replicasOps(env, clusterId, replicas);
  if (ops.length > 0) {
    // The group stamps ride in the same patch as the replicas: other clusters' as they are, this
    // cluster's without the groups the Env no longer has.
    const groups = new Set((env.spec.autoscaling?.groups ?? []).map((g) => stampKey(clusterId, g.name)));
    const mine = `${clusterId}/`;
    const kept = new Map([...stamps].filter(([key]) => !key.startsWith(mine) || groups.has(key)));
    // An Env without annotations gets the whole map: tested against its resourceVersion, so an
    // annotation added since the read is never replaced (the step is retried on the next run).
    const stampOps: JsonPatchOp[] = stamped
      ? [
          ...(env.metadata?.annotations
            ? []
            : [
                {
                  op: "test" as const,
                  path: "/metadata/resourceVersion",
                  value: env.metadata?.resourceVersion,
                },
              ]),
          ...mapOps("/metadata/annotations", env.metadata?.annotations, {
            [GROUP_STAMPS_ANNOTATION]: encodeGroupStamps(kept),
          }),
        ]
      : [];
    plan.envWrite = envAction(env, [...ops, ...stampOps], plan.changes);
  }
  return plan;
}
