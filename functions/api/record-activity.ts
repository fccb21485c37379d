import type { V1Pod } from "@kubernetes/client-node";
import pLimit from "p-limit";
import { type ActivityRequest, idSelectors, latestPerSandbox } from "../../lib/claims/activity.ts";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { ownedBy, tenantSelector } from "../../lib/claims/tenant-scope.ts";
import { LAST_ACTIVE_ANNOTATION, SANDBOX_ID_LABEL } from "../../lib/crd/keys.ts";
import { isConflict, isNotFound, orMissing } from "../../lib/kube/errors.ts";
import { escapePointer } from "../../lib/kube/json-patch.ts";
import { shouldRecordActivity } from "../../lib/lifecycle/activity-throttle.ts";
import type { HostDeps } from "../host-deps.ts";

export interface ActivityOutcome {
  recorded: number;
  unchanged: number;
  unknown: string[];
}

/** ACTIVITY_CONCURRENCY is how many of one report's reads and writes are in flight at once. */
export const ACTIVITY_CONCURRENCY = 8;

/**
 * recordActivity persists reported last-active times in each sandbox's last-active annotation,
 * which the idle-release step reads. The pods are found by a few lists from the apiserver's
 * watch cache (ids packed into `sandbox-id in (…)` selectors scoped to the tenant, idSelectors);
 * a sandbox claimed a moment ago may read as unknown (its start wrote last-active). Writes are
 * throttled, preconditioned on resourceVersion, and sent a few at a time. A pod the cache showed
 * a moment late fails its write's precondition: it is read again from etcd (one get) and written
 * once more if it still runs that sandbox; a second lost race is left to the next report.
 */
export async function recordActivity(
  deps: HostDeps,
  tenant: Tenant,
  report: ActivityRequest,
): Promise<ActivityOutcome> {
  const latest = latestPerSandbox(report);
  const limit = pLimit(ACTIVITY_CONCURRENCY);
  const lists = await Promise.all(
    idSelectors(SANDBOX_ID_LABEL, [...latest.keys()], tenantSelector(tenant)).map((selector) =>
      limit(() => deps.kube.listPods(undefined, selector, { cached: true })),
    ),
  );
  const pods = lists
    .flatMap((l) => l.items)
    .filter((p) => !p.metadata?.deletionTimestamp && ownedBy(p, tenant) && latest.has(idOf(p)));
  const found = new Set(pods.map(idOf));
  const outcome: ActivityOutcome = {
    recorded: 0,
    unchanged: 0,
    unknown: [...latest.keys()].filter((id) => !found.has(id)),
  };
  await Promise.all(
    pods.map((pod) =>
      limit(async () => {
        const id = idOf(pod);
        const time = latest.get(id) ?? "";
        const written = await record(deps, pod, time, async () => {
          const now = await orMissing(
            deps.kube.getPod(pod.metadata?.namespace ?? "", pod.metadata?.name ?? ""),
          );
          return now && idOf(now) === id && !now.metadata?.deletionTimestamp && ownedBy(now, tenant)
            ? now
            : undefined;
        });
        if (written) outcome.recorded++;
        else outcome.unchanged++;
      }),
    ),
  );
  return outcome;
}

const idOf = (pod: V1Pod) => pod.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "";

/**
 * record writes `time` as the pod's last-active when it is worth a write (a stale read only
 * shows an older last-active, so "not worth it" holds) and the pod is as read. On a lost race it
 * asks `reread` for the pod as etcd holds it (undefined: no longer that sandbox's) and tries once
 * more.
 */
async function record(
  deps: HostDeps,
  pod: V1Pod,
  time: string,
  reread?: () => Promise<V1Pod | undefined>,
): Promise<boolean> {
  if (!shouldRecordActivity(pod.metadata?.annotations?.[LAST_ACTIVE_ANNOTATION], time)) return false;
  try {
    await deps.kube.patchPod(pod.metadata?.namespace ?? "", pod.metadata?.name ?? "", [
      { op: "test", path: "/metadata/resourceVersion", value: pod.metadata?.resourceVersion ?? "" },
      { op: "add", path: `/metadata/annotations/${escapePointer(LAST_ACTIVE_ANNOTATION)}`, value: time },
    ]);
    return true;
  } catch (e) {
    if (!isConflict(e) && !isNotFound(e)) throw e;
    const fresh = isConflict(e) && reread ? await reread() : undefined;
    return fresh ? record(deps, fresh, time) : false;
  }
}
