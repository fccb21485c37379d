// What one run of the pool step should do about the Pod count: which slots to create, which idle
// Pods to mark for scale-down, unmark or delete. Pure, so that any run, repeated, concurrent or
// late, plans the same actions from the same state.
import type { V1Pod } from "@kubernetes/client-node";
import * as v from "valibot";
import { PoolScaleDownPolicy } from "../crd/autoscaling.ts";
import { ENV_LABEL, SANDBOX_PHASE, SCALING_GROUP_LABEL } from "../crd/keys.ts";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { podPhaseSince } from "../lifecycle/phase-since.ts";
import { outdatedFor } from "../lifecycle/pod-revision.ts";
import { podFacts } from "./pod-facts.ts";
import { podName } from "./pod-name.ts";
import { podRevision } from "./render-pod.ts";
import { rolloutDeletes, rolloutFacts } from "./rollout.ts";

/** ScalePlan lists the writes one run should make; every list may be empty. */
export interface ScalePlan {
  /** create: slots to create Pods in (renderPod(pool, slot)), lowest first. */
  create: number[];
  /** protect: idle Pods to mark with SCALE_DOWN_PROTECTED_ANNOTATION = rfc3339(now). */
  protect: string[];
  /** unprotect: idle Pods whose mark is no longer wanted (remove the annotation). */
  unprotect: string[];
  /** delete: marked idle Pods whose protection window is over (delete with uid/resourceVersion preconditions). */
  delete: string[];
  /** replace: outdated idle Pods a rollout deletes now (rolloutDeletes; same preconditions). */
  replace: string[];
}

/** IdleSince tells when a Pod last became idle (undefined when unknown: never a candidate). */
export type IdleSince = (pod: V1Pod) => Date | undefined;

/** idleSinceOf is when a Pod last became idle, as the sandbox lifecycle records it. */
export const idleSinceOf: IdleSince = (pod) => podPhaseSince(pod, SANDBOX_PHASE.IDLE);

/**
 * podSets sorts a pool's Pods once: all of them, those staying (neither terminating nor replaced:
 * a replaced Pod is deleted once its record is stored), and the idle ones among those.
 */
function podSets(pods: readonly V1Pod[]) {
  const all = pods.map((pod) => ({ pod, facts: podFacts(pod) }));
  const live = all.filter((p) => !p.facts.terminating && !p.facts.replaced);
  return { all, live, idle: live.filter((p) => p.facts.phase === SANDBOX_PHASE.IDLE) };
}

/** CRD_DEFAULT_SCALE_DOWN_POLICY is PoolScaleDownPolicy with every CRD default (300/60/10). */
const CRD_DEFAULT_SCALE_DOWN_POLICY: PoolScaleDownPolicy = v.parse(PoolScaleDownPolicy, {});

/**
 * MANUAL_SCALE_DOWN_POLICY governs pools no autoscaling group covers: replicas were lowered by
 * hand, so the surplus idle Pods go as soon as the protection window (a claim in it still wins)
 * is over; the idle-time gate exists to damp an autoscaler, not an operator.
 */
export const MANUAL_SCALE_DOWN_POLICY: PoolScaleDownPolicy = {
  idleTimeoutSeconds: 0,
  stabilizationSeconds: 0,
  protectionWindowSeconds: CRD_DEFAULT_SCALE_DOWN_POLICY.protectionWindowSeconds,
};

/**
 * scaleDownPolicyFor is the scale-down policy that governs a pool. A SandboxPool has no
 * scale-down policy field of its own: the policy lives on the autoscaling group of the owning
 * SandboxEnv. So a member pool (ENV_LABEL and SCALING_GROUP_LABEL set, the Env passed in and
 * having that group) gets its group's policy, with CRD defaults for any field left out; every
 * other pool (standalone, excluded from autoscaling, Env or group not found) is scaled by hand
 * and gets MANUAL_SCALE_DOWN_POLICY. The group's `enabled` switch is not consulted: it decides
 * who sets replicas, not how Pods leave.
 */
export function scaleDownPolicyFor(pool: SandboxPool, env?: SandboxEnv): PoolScaleDownPolicy {
  const labels = pool.metadata?.labels ?? {};
  const envName = labels[ENV_LABEL];
  const groupName = labels[SCALING_GROUP_LABEL];
  const isMember = env !== undefined && envName && groupName && env.metadata?.name === envName;
  const group = isMember ? env.spec.autoscaling?.groups?.find((g) => g.name === groupName) : undefined;
  if (!group) return MANUAL_SCALE_DOWN_POLICY;
  const set = Object.entries(group.scaleDownPolicy ?? {}).filter(([, value]) => typeof value === "number");
  return { ...CRD_DEFAULT_SCALE_DOWN_POLICY, ...Object.fromEntries(set) };
}

function secondsBetween(from: Date, to: Date): number {
  return (to.getTime() - from.getTime()) / 1000;
}

/** byTimeThenName orders by a time (oldest first), then by name, so every run picks the same Pods. */
function byTimeThenName(a: { at: Date; name: string }, b: { at: Date; name: string }): number {
  return a.at.getTime() - b.at.getTime() || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/**
 * planScale decides the Pod-count writes for one run, from the pool, all of its Pods (including
 * terminating ones) and `now`:
 *
 * - count is the number of Pods staying, whatever their phase or name (adopted Pods count too):
 *   neither terminating (deletionTimestamp set) nor replaced (stopping, marked to be replaced:
 *   complete-stopping deletes it once its record is stored, so its successor is made at once).
 *   The ceiling is replicas, plus the pool's maxSurge while any Pod is of an outdated pod
 *   revision (a rollout, ADR 0031; see lib/pool/rollout.ts).
 * - count < the ceiling: create Pods in the lowest free slots below the ceiling plus the number
 *   of Pods leaving (terminating or replaced): `replicas - count` of them, or during a rollout as
 *   many as bring the current-revision Pods up to replicas without passing the ceiling (new Pods
 *   first). A slot is taken by any Pod with its name, leaving or not, so a slot whose Pod is
 *   still finalizing is skipped and its successor surges past replicas instead of waiting for it
 *   (ADR 0025). Slots stay below that bound, which is what bounds concurrent runs (see podName);
 *   a run that saw a Pod leaving and one that saw it gone may together overshoot by that surge,
 *   which scale-down then removes.
 * - count ≤ the ceiling: every mark on an idle Pod is removed (replicas went back up, or the
 *   Pods above replicas are a rollout's surge), and during a rollout the outdated idle Pods that
 *   may go now are deleted at once (replace; rolloutDeletes says which).
 * - count > the ceiling: only idle Pods (phase label idle, not terminating) are ever removed;
 *   starting, running, stopping and failed Pods are never deleted to shrink (the pool stays
 *   above replicas until sandboxes are released). Removal is two-phase so a claim can still win:
 *   the plan marks (protect) as many idle Pods as the excess not yet covered by marks, choosing
 *   Pods idle for at least policy.idleTimeoutSeconds, outdated ones first, then longest idle; a
 *   mark older than policy.protectionWindowSeconds turns into a delete. Marks beyond the excess
 *   (newest first) are removed. stabilizationSeconds is not applied here: it spaces the
 *   autoscaler's decisions to lower replicas (lib/autoscale/decide.ts), not the removal of Pods
 *   already decided on.
 *
 * A marked Pod that got claimed is not idle any more, so it is simply not considered (the claim
 * clears the mark); a delete must still carry preconditions, as the Pod may be claimed between
 * this read and the delete. idleSince comes from the caller (the sandbox lifecycle code knows
 * when a Pod last became idle); a Pod whose idle time is unknown is never marked.
 */
export function planScale(
  pool: SandboxPool,
  pods: readonly V1Pod[],
  now: Date,
  policy: PoolScaleDownPolicy,
  idleSince: IdleSince,
  revision = podRevision(pool),
): ScalePlan {
  const plan: ScalePlan = { create: [], protect: [], unprotect: [], delete: [], replace: [] };
  const poolName = pool.metadata?.name ?? "";
  const replicas = pool.spec.replicas;
  const { all, live, idle } = podSets(pods);
  const count = live.length;
  const rollout = rolloutFacts(pool, pods, revision);
  const { ceiling } = rollout;

  if (count <= ceiling) {
    plan.unprotect = idle.filter((p) => p.facts.scaleDownMark !== undefined).map((p) => p.facts.name);
    const staying = live.map((p) => p.pod);
    if (rollout.outdated > 0) plan.replace = rolloutDeletes(pool, staying, revision);
    const updated = staying.filter((p) => !outdatedFor(p, revision)).length;
    const wanted = rollout.outdated > 0 ? Math.min(ceiling - count, replicas - updated) : replicas - count;
    const taken = new Set(all.map((p) => p.facts.name));
    // A Pod on its way out holds its slot until it is gone; its successor takes one past the
    // ceiling (a surge of at most one slot per leaving Pod), so a replaced Pod leaves no gap.
    const slots = ceiling + (all.length - live.length);
    for (let slot = 0; slot < slots && plan.create.length < wanted; slot++) {
      if (!taken.has(podName(poolName, slot))) plan.create.push(slot);
    }
    return plan;
  }

  const excess = count - ceiling;
  const marked = idle
    .filter((p) => p.facts.scaleDownMarkedAt !== undefined)
    .map((p) => ({ at: p.facts.scaleDownMarkedAt as Date, name: p.facts.name }))
    .sort(byTimeThenName);
  const kept = marked.slice(0, excess);
  plan.unprotect = marked.slice(excess).map((m) => m.name);
  plan.delete = kept
    .filter((m) => secondsBetween(m.at, now) >= policy.protectionWindowSeconds)
    .map((m) => m.name);

  const wanted = excess - kept.length;
  if (wanted > 0) {
    const candidates: { at: Date; name: string; outdated: boolean }[] = [];
    for (const p of idle) {
      if (p.facts.scaleDownMarkedAt !== undefined) continue;
      const since = idleSince(p.pod);
      if (since && secondsBetween(since, now) >= policy.idleTimeoutSeconds) {
        candidates.push({ at: since, name: p.facts.name, outdated: outdatedFor(p.pod, revision) });
      }
    }
    plan.protect = candidates
      .sort((a, b) => Number(b.outdated) - Number(a.outdated) || byTimeThenName(a, b))
      .slice(0, wanted)
      .map((c) => c.name);
  }
  // A mark that cannot be read is rewritten when its Pod is picked again, otherwise removed.
  for (const p of idle) {
    const garbled = p.facts.scaleDownMark !== undefined && p.facts.scaleDownMarkedAt === undefined;
    if (garbled && !plan.protect.includes(p.facts.name)) plan.unprotect.push(p.facts.name);
  }
  return plan;
}

/**
 * scaleDownWait says what a scale-down is waiting for, from the same inputs as planScale, in
 * words an operator can act on: marked Pods and when their protection window ends, the next
 * idle Pods not idle long enough, sandboxes that must be
 * released first. Times are absolute, so the text only changes when the situation does.
 * Undefined when the pool is not above its replicas (plus a rollout's surge).
 */
export function scaleDownWait(
  pool: SandboxPool,
  pods: readonly V1Pod[],
  now: Date,
  policy: PoolScaleDownPolicy,
  idleSince: IdleSince,
): string | undefined {
  const { live, idle } = podSets(pods);
  const excess = live.length - rolloutFacts(pool, pods, podRevision(pool)).ceiling;
  if (excess <= 0) return undefined;
  const marked = idle.flatMap((p) => (p.facts.scaleDownMarkedAt ? [p.facts.scaleDownMarkedAt] : []));
  const parts: string[] = [];
  if (marked.length > 0) {
    const ends = new Date(
      Math.max(...marked.map((t) => t.getTime())) + policy.protectionWindowSeconds * 1000,
    );
    parts.push(
      `${marked.length} idle pod(s) marked, deleted once their ${policy.protectionWindowSeconds} s protection window ends (${ends.toISOString()}) unless claimed first`,
    );
  }
  const unmarked = idle.filter((p) => !p.facts.scaleDownMarkedAt);
  const young = unmarked.filter((p) => {
    const since = idleSince(p.pod);
    return !since || secondsBetween(since, now) < policy.idleTimeoutSeconds;
  });
  if (young.length > 0 && marked.length < excess)
    parts.push(
      `${young.length} idle pod(s) idle for less than ${policy.idleTimeoutSeconds} s (scaleDownPolicy.idleTimeoutSeconds)`,
    );
  const busy = excess - idle.length;
  if (busy > 0) parts.push(`${busy} pod(s) must finish their sandboxes first (only idle pods are removed)`);
  return parts.length > 0 ? parts.join("; ") : undefined;
}
