// When the router writes a sandbox's last-active annotation (agentbox's "the RFC3339 time of the
// last HTTP request proxied through ExtProc"): the annotation is the hosts' shared truth of
// activity, so traffic through one host keeps the sandbox alive for every other host's idle
// release. A write costs the apiserver, so it is throttled; the throttle is a fraction of the
// sandbox's idle timeout (a 5 s timeout cannot wait 30 s for a write), at most the push path's.
import { activityThrottleSeconds, shouldRecordActivity } from "../lifecycle/activity-throttle.ts";
import { parseTime, rfc3339 } from "../util/time.ts";

/** RoutedSandbox is what the router's watch shows of a Running sandbox's pod. */
export interface RoutedSandbox {
  sandboxId: string;
  namespace: string;
  podName: string;
  /** lastActive is the pod's last-active annotation as the watch last showed it. */
  lastActive?: string | undefined;
  /** idleTimeoutSeconds is the pod's idle timeout (none: the sandbox is never idle-released). */
  idleTimeoutSeconds?: number | undefined;
}

/** ActivityWrite is one last-active annotation to write, over the value it expects to replace. */
export interface ActivityWrite {
  sandboxId: string;
  namespace: string;
  podName: string;
  time: string;
  /**
   * expected is the last-active the plan compared with (undefined: none known); the write tests
   * it, so a slower host never moves another host's later time backwards.
   */
  expected?: string;
}

/**
 * planActivityWrites says which routed sandboxes get a last-active write: those whose traffic
 * (`seen`: sandbox id → last activity, now for one with an open stream) moved past the later of
 * the stored annotation and this host's own last write (`written`, which the watch may not show
 * yet) by the sandbox's throttle. A sandbox without a route gets nothing (released, not Running).
 */
export function planActivityWrites(
  routed: Iterable<RoutedSandbox>,
  seen: ReadonlyMap<string, Date>,
  written: ReadonlyMap<string, string>,
): ActivityWrite[] {
  const writes: ActivityWrite[] = [];
  for (const s of routed) {
    const at = seen.get(s.sandboxId);
    if (!at) continue;
    const time = rfc3339(at);
    const stored = laterTime(s.lastActive, written.get(s.sandboxId));
    if (!shouldRecordActivity(stored, time, activityThrottleSeconds(s.idleTimeoutSeconds))) continue;
    writes.push({
      sandboxId: s.sandboxId,
      namespace: s.namespace,
      podName: s.podName,
      time,
      ...(stored ? { expected: stored } : {}),
    });
  }
  return writes;
}

/** laterTime is the later of two RFC 3339 times (either may be missing or unreadable). */
function laterTime(a: string | undefined, b: string | undefined): string | undefined {
  const ta = parseTime(a);
  const tb = parseTime(b);
  if (!ta || !tb) return ta ? a : tb ? b : undefined;
  return ta.getTime() >= tb.getTime() ? a : b;
}
