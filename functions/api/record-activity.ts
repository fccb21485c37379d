import { LAST_ACTIVE_ANNOTATION, SANDBOX_ID_LABEL } from "../../lib/api/keys.ts";
import { isConflict, isNotFound } from "../../lib/kube/errors.ts";
import { escapePointer } from "../../lib/kube/json-patch.ts";
import {
  type ActivityRequest,
  latestPerSandbox,
  shouldRecordActivity,
} from "../../lib/sandboxes/activity.ts";
import type { Tenant } from "../../lib/sandboxes/api-keys.ts";
import type { ApiDeps } from "./deps.ts";
import { ownedBy } from "./find-sandbox.ts";

export interface ActivityOutcome {
  recorded: number;
  unchanged: number;
  unknown: string[];
}

/**
 * recordActivity persists reported last-active times in each sandbox's last-active annotation,
 * which the idle-release step reads. Pods are found 100 ids per list (a set-based selector);
 * writes are throttled and preconditioned, and a lost race is left to the next report.
 */
export async function recordActivity(
  deps: ApiDeps,
  tenant: Tenant,
  report: ActivityRequest,
): Promise<ActivityOutcome> {
  const outcome: ActivityOutcome = { recorded: 0, unchanged: 0, unknown: [] };
  const latest = latestPerSandbox(report);
  const ids = [...latest.keys()];
  for (let i = 0; i < ids.length; i += 100) {
    const chunk = ids.slice(i, i + 100);
    const pods = (
      await deps.kube.listPods(undefined, `${SANDBOX_ID_LABEL} in (${chunk.join(",")})`)
    ).items.filter((p) => !p.metadata?.deletionTimestamp && ownedBy(p, tenant));
    const found = new Set(pods.map((p) => p.metadata?.labels?.[SANDBOX_ID_LABEL] ?? ""));
    outcome.unknown.push(...chunk.filter((id) => !found.has(id)));
    for (const pod of pods) {
      const time = latest.get(pod.metadata?.labels?.[SANDBOX_ID_LABEL] ?? "") ?? "";
      if (!shouldRecordActivity(pod.metadata?.annotations?.[LAST_ACTIVE_ANNOTATION], time)) {
        outcome.unchanged++;
        continue;
      }
      try {
        await deps.kube.patchPod(pod.metadata?.namespace ?? "", pod.metadata?.name ?? "", [
          { op: "test", path: "/metadata/resourceVersion", value: pod.metadata?.resourceVersion ?? "" },
          { op: "add", path: `/metadata/annotations/${escapePointer(LAST_ACTIVE_ANNOTATION)}`, value: time },
        ]);
        outcome.recorded++;
      } catch (e) {
        if (!isConflict(e) && !isNotFound(e)) throw e;
        outcome.unchanged++;
      }
    }
  }
  return outcome;
}
