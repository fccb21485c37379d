import { demandWorthRecording } from "../../lib/claims/demand.ts";
import { LAST_SANDBOX_CREATE_TIME_ANNOTATION } from "../../lib/crd/keys.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { isConflict } from "../../lib/kube/errors.ts";
import { escapePointer } from "../../lib/kube/json-patch.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * CreateStamps writes a pool's last-sandbox-create-time (the autoscaler's "someone wanted a
 * sandbox here", which its idle-zero quiet window reads) for every create this host serves or
 * cannot serve, throttled: at most one write per pool every few seconds, judged from the later of
 * the stored stamp and this process's last write, and tested against the stamp as read (a burst
 * of creates that all read the same pool costs one write, not one each, even across processes). Best effort: a lost stamp only delays a proactive scale-up. The
 * memory is this process's own writes, never a source of truth.
 */
export class CreateStamps {
  private readonly written = new Map<string, Date>();
  private readonly inflight = new Set<Promise<void>>();
  private readonly deps: Pick<HostDeps, "kube" | "log">;
  /** tally counts this process's stamp writes: landed, lost to another's (raced), failed. */
  readonly tally = { written: 0, raced: 0, failed: 0 };

  constructor(deps: Pick<HostDeps, "kube" | "log">) {
    this.deps = deps;
  }

  /** stamp records a create on the pool at `now`, unless one was recorded within the throttle. */
  stamp(pool: SandboxPool, now: Date): void {
    const namespace = pool.metadata?.namespace ?? "";
    const name = pool.metadata?.name ?? "";
    const key = `${namespace}/${name}`;
    const stored = pool.metadata?.annotations?.[LAST_SANDBOX_CREATE_TIME_ANNOTATION];
    if (!demandWorthRecording([stored, this.written.get(key)], now)) return;
    this.written.set(key, now);
    // Tested against the stamp as read: of the requests that read the same pool (a burst served
    // by many processes or Worker isolates, each with its own memory), one writes. A pool never
    // stamped has nothing to test: its first burst may write more than once, once in its life.
    const value = rfc3339(now);
    const path = `/metadata/annotations/${escapePointer(LAST_SANDBOX_CREATE_TIME_ANNOTATION)}`;
    const write = (
      stored !== undefined
        ? this.deps.kube.patchPool(namespace, name, [
            { op: "test", path, value: stored },
            { op: "replace", path, value },
          ])
        : // Nothing to test: a merge patch, which leaves the other annotations (a host's fresh
          // pending mark among them) as they are.
          this.deps.kube.setPoolAnnotations(namespace, name, { [LAST_SANDBOX_CREATE_TIME_ANNOTATION]: value })
    )
      .then(
        () => {
          this.tally.written++;
        },
        (e: unknown) => {
          // The stamp changed since the read: most likely another request stamped it, which is
          // enough; the next create decides again from the stamp it reads (it may have been removed).
          this.written.delete(key);
          if (isConflict(e)) this.tally.raced++;
          else {
            this.tally.failed++;
            this.deps.log.warn({ pool: key, err: String(e) }, "create time not recorded");
          }
        },
      )
      .finally(() => this.inflight.delete(write));
    this.inflight.add(write);
  }

  /** flushed resolves once every stamp started so far is written (shutdown, waitUntil). */
  async flushed(): Promise<void> {
    await Promise.all(this.inflight);
  }
}
