// One Env run's writes, decided from one snapshot: create the member pools that are missing,
// patch the ones that drifted, delete the ones no longer listed, and write the status once,
// only when it changed. Every write carries its precondition (a deterministic name, a
// resourceVersion test, a uid), so racing runs each make a write at most once.
import type { V1Pod } from "@kubernetes/client-node";
import { ADOPTED_POOL_ANNOTATION } from "../crd/keys.ts";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { type Action, envTarget, isTerminating, poolTarget, testSpec, testVersion } from "../kube/action.ts";
import type { JsonPatchOp } from "../kube/json-patch.ts";
import { localMembers } from "../membership/env-members.ts";
import { envOwnerReference, ownedBy } from "../membership/env-ownership.ts";
import { jsonEqual } from "../util/deep-equal.ts";
import { autoscalingStalls } from "./autoscaling-stall.ts";
import { computeEnvStatus } from "./env-status.ts";
import type { InstanceTypeCatalog } from "./instance-types.ts";
import { memberDrift } from "./member-drift.ts";
import type { MemberView } from "./member-report.ts";
import { viewMember } from "./member-view.ts";
import type { RenderedMember } from "./render-member.ts";

/** EnvSnapshot is one fresh read of an Env and everything its run decides from. */
export interface EnvSnapshot {
  env: SandboxEnv;
  /** pools are the pools of the Env's namespace that it owns or that carry a member's name. */
  pools: SandboxPool[];
  /** template is the Env's templateRef, null when it does not exist (or none is named). */
  template: SandboxTemplate | null;
  /** pullSecret: the Secret ips-<env> exists in the Env's namespace. */
  pullSecret: boolean;
  /** pods are the Pods of the members the autoscaler manages ([] when it manages none). */
  pods: V1Pod[];
  /**
   * catalog is the instance type catalog members are sized from: null when its ConfigMap does not
   * exist, undefined when it was not read (the Env names no instance type); without one, members
   * keep their inline or template resources.
   */
  catalog?: InstanceTypeCatalog | null | undefined;
}

/** newMemberPool is the pool object a create sends: the render, owned (controlling) by the Env. */
function newMemberPool(env: SandboxEnv, rendered: RenderedMember): SandboxPool {
  return {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxPool",
    metadata: {
      name: rendered.name,
      namespace: env.metadata?.namespace ?? "",
      labels: rendered.labels,
      annotations: rendered.annotations,
      ownerReferences: [envOwnerReference(env, true)],
    },
    spec: rendered.spec as SandboxPool["spec"],
  };
}

/** createAction creates a missing member pool, when its render is complete. */
function createAction(env: SandboxEnv, rendered: RenderedMember): Action[] {
  if (!rendered.complete) return [];
  const pool = newMemberPool(env, rendered);
  const note = `created for SandboxEnv "${env.metadata?.name}" with ${rendered.spec.replicas} replica(s)`;
  return [
    {
      target: poolTarget(pool),
      why: `create member pool (${rendered.spec.replicas} replicas)`,
      write: { op: "create", object: pool },
      event: { type: "Normal", reason: "MemberCreated", action: "Create", note },
    },
  ];
}

/**
 * adoptOps attach a pool the adoption step made this Env for (the Env's adopted-pool annotation
 * names the pool's uid): a non-controlling owner reference, as upstream's adoption stamps it.
 */
function adoptOps(env: SandboxEnv, pool: SandboxPool): JsonPatchOp[] | undefined {
  const adopted = env.metadata?.annotations?.[ADOPTED_POOL_ANNOTATION];
  if (!adopted || adopted !== pool.metadata?.uid) return undefined;
  const ref = envOwnerReference(env, false);
  return pool.metadata?.ownerReferences
    ? [{ op: "add", path: "/metadata/ownerReferences/-", value: ref }]
    : [{ op: "add", path: "/metadata/ownerReferences", value: [ref] }];
}

/**
 * updateAction patches a live member pool back to its render. A replicas change the Env did not
 * make (the pool's replicas differ from what the Env last wanted, e.g. `kubectl scale`) is
 * reverted with a Warning Event that says where replicas are set; a change of the Env's own is
 * propagated with a Normal one.
 */
function updateAction(
  env: SandboxEnv,
  pool: SandboxPool,
  rendered: RenderedMember,
  lastWanted?: number,
): Action[] {
  const owned = ownedBy(pool, env);
  const adopt = owned ? undefined : adoptOps(env, pool);
  if (!adopt && !owned) return [];
  const drift = memberDrift(pool, rendered);
  if (!adopt && drift.ops.length === 0) return [];
  const envName = env.metadata?.name ?? "";
  const changed = drift.changed.join(", ");
  const reverted = drift.replicas && lastWanted !== undefined && drift.replicas.live !== lastWanted;
  const event = adopt
    ? {
        type: "Normal" as const,
        reason: "Adopted",
        action: "Adopt",
        note: `adopted by SandboxEnv "${envName}"`,
      }
    : reverted && drift.replicas
      ? {
          type: "Warning" as const,
          reason: "ReplicasReverted",
          action: "Revert",
          note: `spec.replicas ${drift.replicas.live} reverted to ${drift.replicas.wanted}: SandboxEnv "${envName}" owns this pool's replicas; set them on the Env member (spec.clusters[].members[name=${rendered.name}].spec.replicas)`,
        }
      : {
          type: "Normal" as const,
          reason: "MemberUpdated",
          action: "Update",
          note: `updated from SandboxEnv "${envName}": ${changed}`,
        };
  return [
    {
      target: poolTarget(pool),
      why: adopt ? "adopt pool into its Env" : `member drifted (${changed}); patch it back`,
      // Adopting appends an owner reference: only the version read may take it. Drift touches
      // the spec (and the Env's own labels and annotations): the spec read is the precondition.
      write: {
        op: "patch",
        patch: [...(adopt ? [testVersion(pool), ...adopt] : testSpec(pool)), ...drift.ops],
      },
      event,
    },
  ];
}

/** deleteAction deletes a pool the Env owns that is no longer one of its local members. */
function deleteAction(env: SandboxEnv, pool: SandboxPool): Action {
  return {
    target: poolTarget(pool),
    why: "no longer a member of its Env; delete it",
    write: { op: "delete", ...(pool.metadata?.uid ? { uid: pool.metadata.uid } : {}) },
    event: {
      type: "Normal",
      reason: "MemberRemoved",
      action: "Delete",
      note: `removed from SandboxEnv "${env.metadata?.name}"; deleting (running sandboxes are recorded)`,
    },
  };
}

/**
 * statusAction writes the Env status when it changed, under a resourceVersion test; `pods` (the
 * autoscaled members') say whether a group has stalled.
 */
function statusAction(
  env: SandboxEnv,
  views: readonly MemberView[],
  pods: readonly V1Pod[],
  templateFound: boolean,
  clusterId: string,
  now: Date,
): Action[] {
  const stalls = autoscalingStalls(env, views, pods, clusterId, now);
  const next = computeEnvStatus(env, clusterId, views, templateFound, now, stalls);
  if (jsonEqual(env.status ?? {}, next)) return [];
  const saturated = newlySaturated(env.status, next, clusterId);
  return [
    {
      target: envTarget(env),
      why: `status: ${next.memberCount} member(s), desired ${next.desiredReplicas}, idle ${next.idleReplicas}, running ${next.runningReplicas}`,
      write: { op: "patch-status", patch: [testVersion(env), { op: "add", path: "/status", value: next }] },
      ...(saturated.length > 0
        ? {
            event: {
              type: "Warning" as const,
              reason: "Saturated",
              action: "Scale",
              note: `member(s) saturated, held back from routing and growth: ${saturated.join(", ")}`,
            },
          }
        : {}),
    },
  ];
}

/** newlySaturated names the local members Saturated in `next` that were not in `previous`. */
function newlySaturated(
  previous: SandboxEnv["status"],
  next: NonNullable<SandboxEnv["status"]>,
  clusterId: string,
): string[] {
  const members = (s: SandboxEnv["status"]) =>
    s?.clusters?.find((c) => c.clusterID === clusterId)?.observedMembers ?? [];
  const before = new Set(
    members(previous)
      .filter((m) => m.state === "Saturated")
      .map((m) => m.name),
  );
  return members(next)
    .filter((m) => m.state === "Saturated" && !before.has(m.name))
    .map((m) => m.name);
}

/**
 * planEnv is one Env run over the local cluster segment (clusterId): each member rendered
 * (viewMember: from the template revision its pool records; a new one from the template as it is
 * now), its pool created when missing, patched when it drifted (memberDrift), left
 * alone when another owner has it; owned pools that are no longer members of a segment that
 * still exists deleted (the pool steps record their sandboxes); the status written when it changed. An Env being deleted gets
 * no writes: garbage collection deletes its pools through their owner references.
 */
export function planEnv(snapshot: EnvSnapshot, clusterId: string, now: Date): Action[] {
  const { env, pools, template, pullSecret, pods, catalog } = snapshot;
  if (isTerminating(env)) return [];
  const byName = new Map(pools.map((p) => [p.metadata?.name ?? "", p]));
  const lastWanted = new Map(
    (env.status?.clusters?.find((c) => c.clusterID === clusterId)?.observedMembers ?? []).map(
      (m) => [m.name, m.desiredReplicas] as const,
    ),
  );
  const members = localMembers(env, clusterId);
  const inputs = { template, pullSecret, catalog: catalog ?? undefined };
  const views: MemberView[] = members.map((member) =>
    viewMember(env, member, byName.get(member.name), inputs),
  );
  const writes = views.flatMap(({ pool, rendered }) => {
    if (!pool) return createAction(env, rendered);
    if (isTerminating(pool)) return [];
    return updateAction(env, pool, rendered, lastWanted.get(rendered.name));
  });
  // Without a segment for this cluster the Env says nothing about its pools here (a wrong
  // cluster ID must never read as "every member removed"): only a listed segment removes.
  const names = new Set(members.map((m) => m.name));
  const hasSegment = env.spec.clusters?.some((c) => c.clusterID === clusterId) ?? false;
  const removals = hasSegment
    ? pools
        .filter((p) => ownedBy(p, env) && !isTerminating(p) && !names.has(p.metadata?.name ?? ""))
        .map((p) => deleteAction(env, p))
    : [];
  return [...writes, ...removals, ...statusAction(env, views, pods, template !== null, clusterId, now)];
}
