// When each autoscaling group of an Env last scaled, kept on the Env itself and written in the same
// preconditioned patch as the replicas it moved. The pools' status.autoscaling carries the same
// times (the wire contract), but those are written after the Env patch, one pool at a time, each
// under its own test: a crash between the writes, a racing run's bookkeeping landing first, or a
// run that read the Env after the patch but the pools before their bookkeeping would each lose
// the time, and the cooldown or stabilization with it, so a second step would follow at once.
// The Env annotation cannot be lost that way: no replicas move without it.
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import { parseTime } from "../util/time.ts";

/**
 * GROUP_STAMPS_ANNOTATION holds the stamps of every group of the Env, as JSON keyed by
 * "<clusterID>/<group>": each cluster's control plane scales its own segment of a group, on its
 * own clock of cooldowns.
 */
export const GROUP_STAMPS_ANNOTATION = "autoscaler.agentbox.navix.sh/last-scale";

/** stampKey is one cluster's group in the annotation. */
export function stampKey(clusterId: string, group: string): string {
  return `${clusterId}/${group}`;
}

/** GroupStamp is when one group last scaled up and down (RFC 3339). */
export interface GroupStamp {
  lastScaleUpTime?: string;
  lastScaleDownTime?: string;
}

/**
 * groupStampsOf reads the Env's stamps. A garbled annotation (hand edited) reads as no stamps:
 * the pools' own times still gate, as they did before the annotation existed.
 */
export function groupStampsOf(env: SandboxEnv): Map<string, GroupStamp> {
  const raw = env.metadata?.annotations?.[GROUP_STAMPS_ANNOTATION];
  const out = new Map<string, GroupStamp>();
  if (!raw) return out;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return out;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return out;
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value !== "object" || value === null) continue;
    const { lastScaleUpTime: up, lastScaleDownTime: down } = value as Record<string, unknown>;
    out.set(key, {
      ...(parseTime(up) ? { lastScaleUpTime: up as string } : {}),
      ...(parseTime(down) ? { lastScaleDownTime: down as string } : {}),
    });
  }
  return out;
}

/** encodeGroupStamps is the annotation value for the given stamps (groups in name order). */
export function encodeGroupStamps(stamps: ReadonlyMap<string, GroupStamp>): string {
  const sorted = [...stamps].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(Object.fromEntries(sorted));
}
