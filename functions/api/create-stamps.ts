import { LAST_SANDBOX_CREATE_TIME_ANNOTATION } from "../../lib/api/keys.ts";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import { demandWorthRecording } from "../../lib/sandboxes/demand.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import type { StepDeps } from "../deps.ts";

/**
 * CreateStamps writes a pool's last-sandbox-create-time (the autoscaler's "someone wanted a
 * sandbox here", which its idle-zero quiet window reads) for every create this host serves or
 * cannot serve, throttled: at most one write per pool every few seconds, judged from the later of
 * the stored stamp and this process's last write (a burst of creates that all read the same pool
 * costs one write, not one each). Best effort: a lost stamp only delays a proactive scale-up. The
 * memory is this process's own writes, never a source of truth.
 */
export class CreateStamps {
  private readonly written = new Map<string, Date>();
  private readonly inflight = new Set<Promise<void>>();
  private readonly deps: Pick<StepDeps, "kube" | "log">;

  constructor(deps: Pick<StepDeps, "kube" | "log">) {
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
    const write = this.deps.kube
      .setPoolAnnotations(namespace, name, { [LAST_SANDBOX_CREATE_TIME_ANNOTATION]: rfc3339(now) })
      .then(
        () => {},
        (e: unknown) => this.deps.log.warn({ pool: key, err: String(e) }, "create time not recorded"),
      )
      .finally(() => this.inflight.delete(write));
    this.inflight.add(write);
  }

  /** flushed resolves once every stamp started so far is written (shutdown, waitUntil). */
  async flushed(): Promise<void> {
    await Promise.all(this.inflight);
  }
}
