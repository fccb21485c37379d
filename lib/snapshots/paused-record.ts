// The terminal history record of a sandbox that ends while paused (killed, or its retention ran
// out): it holds no pod, so the record is read from its snapshot, as the stop record of a running
// sandbox is read from its pod (lib/lifecycle/stop-record.ts).
import { STOP_REASON } from "../crd/keys.ts";
import type { SandboxSnapshot } from "../crd/sandbox-snapshot.ts";
import type { SandboxRecord } from "../history/record.ts";
import { rfc3339 } from "../util/time.ts";

/**
 * pausedRecord is the record of a paused sandbox ending at `now`: its owner, metadata and the
 * images it asked for from its snapshot, the pod it last ran on, stop reason Released. CPU and
 * memory are 0: the resources were its pod's, and it holds none.
 */
export function pausedRecord(s: SandboxSnapshot, now: Date): SandboxRecord {
  const c = s.spec.claim;
  return {
    sandboxId: s.spec.sandboxId,
    namespace: s.metadata?.namespace ?? "",
    poolName: s.spec.pool,
    podName: s.spec.source.pod,
    ...(c.team ? { team: c.team } : {}),
    ...(c.user ? { user: c.user } : {}),
    terminatedAt: rfc3339(now),
    containerImages: { ...c.containerImages },
    metadata: { ...c.metadata },
    cpuMillis: 0,
    memoryBytes: 0,
    stopReason: STOP_REASON.RELEASED,
  };
}
