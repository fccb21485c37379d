// A SandboxTemplate's status conditions, decided from the template and the pools created from it
// (spec.templateName). Seed 002, SandboxTemplateStatus: "Available": the resource is fully
// functional; "Progressing": the resource is being created or updated; "Degraded": the resource
// failed to reach or maintain its desired state. Pure: the same template and pools give the same
// conditions, and the status is written only when it changed, so a template at rest costs nothing.

import { probe } from "../autoscale/probe.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../crd/sandbox-template.ts";
import { recordedRevision, revisionOf, sameRevision } from "../env/member-revision.ts";
import { type Action, isTerminating, templateTarget, testVersion } from "../kube/action.ts";
import { fieldOps } from "../kube/json-patch.ts";
import { hasEnvOwner } from "../membership/env-ownership.ts";
import { REPLICA_FAILURE_REASON } from "../pool/creation-block.ts";
import { podTemplateIssues } from "../pool/pod-template-checks.ts";
import { REPLICA_FAILURE } from "../pool/pool-status.ts";
import { EMBEDDED_FIELDS, refreshFromTemplate, templateCopyNeeded } from "../pool/template-copy.ts";
import { type ConditionCore, setConditions } from "../util/conditions.ts";
import { jsonEqual } from "../util/deep-equal.ts";

/** TEMPLATE_CONDITION names the template's conditions (the seed's standard condition types). */
export const TEMPLATE_CONDITION = {
  AVAILABLE: "Available",
  PROGRESSING: "Progressing",
  DEGRADED: "Degraded",
} as const;

/** TEMPLATE_REASON lists the reasons of the template's conditions. */
export const TEMPLATE_REASON = {
  /** INVALID_POD_TEMPLATE: spec.template cannot become a Pod (Degraded True, Available False). */
  INVALID_POD_TEMPLATE: "InvalidPodTemplate",
  /** PODS_REFUSED: a pool at the template's revision is refused its Pods (Degraded True, Available False). */
  PODS_REFUSED: "PodsRefused",
  /** RENDERS_PODS: nothing says its Pods cannot be rendered (Degraded False). */
  RENDERS_PODS: "RendersPods",
  /** NO_POOLS: no pool uses the template (Available True, Progressing False). */
  NO_POOLS: "NoPools",
  /** IDLE_PODS_READY: a pool using it has a ready idle Pod (Available True). */
  IDLE_PODS_READY: "IdlePodsReady",
  /** NO_IDLE_PODS_READY: no pool using it has a ready idle Pod (Available False). */
  NO_IDLE_PODS_READY: "NoIdlePodsReady",
  /** POOLS_ROLLING: a pool at its revision is still short of ready Pods (Progressing True). */
  POOLS_ROLLING: "PoolsRolling",
  /** POOLS_SETTLED: no pool at its revision is waiting for Pods (Progressing False). */
  POOLS_SETTLED: "PoolsSettled",
} as const;

/** MAX_NAMED is how many pools a condition message names before it says "and N more". */
const MAX_NAMED = 5;

const key = (pool: SandboxPool) => `${pool.metadata?.namespace}/${pool.metadata?.name}`;

/** named lists "pool: detail" entries, the first MAX_NAMED of them. */
function named(entries: readonly [SandboxPool, string][]): string {
  const shown = entries.slice(0, MAX_NAMED).map(([pool, detail]) => `${key(pool)}: ${detail}`);
  const more = entries.length - shown.length;
  return `${shown.join("; ")}${more > 0 ? `; and ${more} more` : ""}`;
}

/** poolsOfTemplate are the live pools created from the template (spec.templateName names it). */
export function poolsOfTemplate(template: SandboxTemplate, pools: readonly SandboxPool[]): SandboxPool[] {
  const name = template.metadata?.name;
  return pools.filter((p) => p.spec.templateName === name && !isTerminating(p));
}

/**
 * atRevision: the pool renders its Pods from the template as it is now. A standalone pool keeps
 * its own copy of the template until an operator refreshes it (ADR 0014), so it is at the
 * template's revision when a refresh would change none of its embedded fields, or when its copy
 * is still to be made. An Env member renders from the revision its pool records until it is
 * refreshed (ADR 0033), so it is at the template's revision when that record is of the template as
 * it is now; one that records none (a snapshot member) counts as at it.
 */
function atRevision(pool: SandboxPool, template: SandboxTemplate): boolean {
  if (hasEnvOwner(pool)) {
    const recorded = recordedRevision(pool);
    return !recorded || sameRevision(recorded, revisionOf(template));
  }
  if (templateCopyNeeded(pool)) return true;
  const refreshed = refreshFromTemplate(pool, template);
  return (
    refreshed.ok &&
    fieldOps("/spec", pool.spec, refreshed.copy.embedded, EMBEDDED_FIELDS, jsonEqual).length === 0
  );
}

/** statusCurrent: the pool's status was computed from its spec as it is (no condition is older). */
function statusCurrent(pool: SandboxPool): boolean {
  const generation = pool.metadata?.generation;
  return !(pool.status?.conditions ?? []).some(
    (c) =>
      generation !== undefined && c.observedGeneration !== undefined && c.observedGeneration < generation,
  );
}

/**
 * refusal is why the pool's Pods cannot be created, when that is the pod template's doing: its
 * current ReplicaFailure condition says InvalidPodTemplate, or FailedCreate for a reason that is
 * not quota (probe's Failed: the apiserver or an admission webhook refused the Pod itself).
 */
function refusal(pool: SandboxPool): string | undefined {
  const failure = pool.status?.conditions?.find((c) => c.type === REPLICA_FAILURE && c.status === "True");
  const ours: string[] = [REPLICA_FAILURE_REASON.INVALID_POD_TEMPLATE, REPLICA_FAILURE_REASON.FAILED_CREATE];
  if (!failure || !ours.includes(failure.reason) || !statusCurrent(pool)) return undefined;
  const probed = probe(pool, []);
  return probed.result === "Failed" ? probed.message : undefined;
}

/** readyIdle is the pool's idle Pods that are Ready, as its status counts them. */
function readyIdle(pool: SandboxPool): number {
  return Math.max(0, (pool.status?.idleReplicas ?? 0) - (pool.status?.unavailableIdleReplicas ?? 0));
}

/**
 * shortfall says what a pool is still waiting for, if anything: a status not yet computed from its
 * spec (re-rendered a moment ago), Pods missing (fewer than spec.replicas in any phase), or idle
 * Pods not Ready yet.
 */
function shortfall(pool: SandboxPool): string | undefined {
  const s = pool.status ?? {};
  const present =
    (s.idleReplicas ?? 0) +
    (s.runningReplicas ?? 0) +
    (s.startingReplicas ?? 0) +
    (s.stoppingReplicas ?? 0) +
    (s.failedReplicas ?? 0);
  const missing = pool.spec.replicas - present;
  const unready = s.unavailableIdleReplicas ?? 0;
  if (!pool.status || !statusCurrent(pool)) return "its new spec is not observed yet";
  if (missing <= 0 && unready === 0) return undefined;
  return [
    missing > 0 ? `${missing} of ${pool.spec.replicas} pod(s) missing` : "",
    unready > 0 ? `${unready} idle pod(s) not Ready` : "",
  ]
    .filter(Boolean)
    .join(", ");
}

/**
 * templateConditions decides Degraded, Progressing and Available for the template and the pools
 * (of any template; only its own are looked at):
 *
 * - Degraded True when its pod template cannot become a Pod (InvalidPodTemplate; admission
 *   refuses such templates, one stored before the webhook ran can still have it) or a pool at its
 *   revision is refused its Pods (PodsRefused, with the apiserver's answer); else False.
 * - Progressing True while a pool at its revision, not refused, is short of Pods (PoolsRolling:
 *   a status not computed from its latest spec, Pods missing, idle Pods not Ready). Until Pods
 *   record the revision they were rendered from, this stands in for "outdated pods being
 *   replaced", so a scale-up shows too, as a Deployment's Progressing does.
 * - Available True when it renders (not Degraded) and it has no pools or one of them has a ready
 *   idle Pod; else False.
 */
export function templateConditions(
  template: SandboxTemplate,
  pools: readonly SandboxPool[],
): ConditionCore[] {
  const own = poolsOfTemplate(template, pools);
  const current = own.filter((p) => atRevision(p, template));
  const issues = podTemplateIssues(template.spec, "spec");
  const refused = current.flatMap((p): [SandboxPool, string][] => {
    const why = refusal(p);
    return why ? [[p, why]] : [];
  });
  const rolling = current.flatMap((p): [SandboxPool, string][] => {
    const why = refused.some(([r]) => r === p) ? undefined : shortfall(p);
    return why ? [[p, why]] : [];
  });
  const degraded: ConditionCore =
    issues.length > 0
      ? {
          type: TEMPLATE_CONDITION.DEGRADED,
          status: "True",
          reason: TEMPLATE_REASON.INVALID_POD_TEMPLATE,
          message: `pods cannot be rendered: ${issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`,
        }
      : refused.length > 0
        ? {
            type: TEMPLATE_CONDITION.DEGRADED,
            status: "True",
            reason: TEMPLATE_REASON.PODS_REFUSED,
            message: `pods rendered from it are refused: ${named(refused)}`,
          }
        : {
            type: TEMPLATE_CONDITION.DEGRADED,
            status: "False",
            reason: TEMPLATE_REASON.RENDERS_PODS,
            message: "its pod template renders pods",
          };
  const progressing: ConditionCore =
    rolling.length > 0
      ? {
          type: TEMPLATE_CONDITION.PROGRESSING,
          status: "True",
          reason: TEMPLATE_REASON.POOLS_ROLLING,
          message: `pools waiting for pods: ${named(rolling)}`,
        }
      : {
          type: TEMPLATE_CONDITION.PROGRESSING,
          status: "False",
          reason: own.length === 0 ? TEMPLATE_REASON.NO_POOLS : TEMPLATE_REASON.POOLS_SETTLED,
          message: own.length === 0 ? "no pool uses it" : "no pool at its revision is waiting for pods",
        };
  const serving = own.filter((p) => readyIdle(p) > 0);
  const available: ConditionCore =
    degraded.status === "True"
      ? {
          type: TEMPLATE_CONDITION.AVAILABLE,
          status: "False",
          reason: degraded.reason,
          message: degraded.message,
        }
      : own.length === 0
        ? {
            type: TEMPLATE_CONDITION.AVAILABLE,
            status: "True",
            reason: TEMPLATE_REASON.NO_POOLS,
            message: "it renders pods and no pool uses it yet",
          }
        : serving.length > 0
          ? {
              type: TEMPLATE_CONDITION.AVAILABLE,
              status: "True",
              reason: TEMPLATE_REASON.IDLE_PODS_READY,
              message: `${serving.length} of ${own.length} pool(s) have ready idle pods: ${named(serving.map((p) => [p, String(readyIdle(p))]))}`,
            }
          : {
              type: TEMPLATE_CONDITION.AVAILABLE,
              status: "False",
              reason: TEMPLATE_REASON.NO_IDLE_PODS_READY,
              message: `none of its ${own.length} pool(s) has a ready idle pod`,
            };
  return [available, progressing, degraded];
}

/**
 * planTemplateStatus computes the template's status in memory (templateConditions, with the
 * lastTransitionTime and observedGeneration bookkeeping of setConditions) and writes it once, only
 * when it differs from the stored one, under a resourceVersion test: a run that read an older
 * template loses (409) and the next run decides again. A template being deleted gets no write.
 */
export function planTemplateStatus(
  template: SandboxTemplate,
  pools: readonly SandboxPool[],
  now: Date,
): Action[] {
  if (isTerminating(template)) return [];
  const computed = templateConditions(template, pools);
  const previous = template.status ?? {};
  const next = {
    ...previous,
    conditions: setConditions(previous.conditions ?? [], computed, now, template.metadata?.generation),
  };
  if (jsonEqual(previous, next)) return [];
  return [
    {
      target: templateTarget(template),
      why: `status: ${computed.map((c) => `${c.type}=${c.status}/${c.reason}`).join(", ")}`,
      write: {
        op: "patch-status",
        patch: [testVersion(template), { op: "add", path: "/status", value: next }],
      },
    },
  ];
}
