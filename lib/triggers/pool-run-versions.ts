import { newestVersion } from "../kube/resource-version.ts";
import type { PodKey, PodTarget, PoolKey } from "./audit-targets.ts";

/** READ_AFRESH: a pool's next run must list its pods (a reported version that cannot be ordered). */
export const READ_AFRESH = null;

/**
 * PoolRunVersions remembers, for each pool, the newest pod version audit events reported since
 * its last whole run began: what a run planned from a host's view of the pool pods must have seen
 * (PoolPodsView.caughtUp), so that the write that triggered the run is in it (ADR 0039). A pod write
 * that reported no version, or one that cannot be ordered, asks for a list instead (READ_AFRESH).
 */
export class PoolRunVersions {
  private readonly wanted = new Map<PoolKey, string | typeof READ_AFRESH>();

  /** note records the versions one audit batch reported for its pods, by their pools. */
  note(pods: readonly (readonly [PodKey, PodTarget])[]): void {
    for (const [key, target] of pods) {
      const pool = key.slice(0, key.lastIndexOf("/")) as PoolKey;
      const seen = this.wanted.get(pool);
      if (seen === READ_AFRESH) continue;
      const version = target.notOlderThan;
      const next = seen === undefined ? newestVersion(version, version) : newestVersion(seen, version);
      this.wanted.set(pool, next ?? READ_AFRESH);
    }
  }

  /**
   * take is what the pool's run starting now must have seen, and forgets it (a later batch notes
   * anew for the run after): undefined when nothing was reported (the view as it is will do),
   * READ_AFRESH when the run must list.
   */
  take(pool: PoolKey): string | typeof READ_AFRESH | undefined {
    const wanted = this.wanted.get(pool);
    this.wanted.delete(pool);
    return wanted;
  }
}
