// Which pools the router has read: a route's pod names its pool by a controlling ownerReference,
// and anyone who may create a pod can write one. PoolOwners reads the named pool (one consistent
// read per pool, shared, a few at once, with a timeout) and remembers the answer a while, so the
// router trusts a reference only when the pool of that name and uid is really in the pod's
// namespace, and a pool costs one read per OWNER_TRUST_MS however many sandboxes it holds.
import pLimit from "p-limit";
import type { CacheDeps } from "../../../functions/cache/cache-deps.ts";
import {
  type OwnerVerdict,
  ownerConfirmed,
  ownerKey,
  type RouteOwner,
  verdictCurrent,
} from "../../../lib/data-plane/route-owner.ts";
import { isNotFound } from "../../../lib/kube/errors.ts";
import { withTimeout } from "../../../lib/util/with-timeout.ts";

/** READ_MS bounds one pool read; READS: pool reads at once; KEEP: verdicts remembered at most. */
const READ_MS = 3_000;
const READS = 4;
const KEEP = 10_000;

/** PoolOwners answers whether a route owner is a real pool, from memory or one read of the pool. */
export class PoolOwners {
  private readonly verdicts = new Map<string, OwnerVerdict>();
  private readonly reads = new Map<string, Promise<boolean | undefined>>();
  private readonly limit = pLimit(READS);
  private readonly deps: Pick<CacheDeps, "kube" | "log">;
  private readonly now: () => number;

  constructor(deps: Pick<CacheDeps, "kube" | "log">, now: () => number = Date.now) {
    this.deps = deps;
    this.now = now;
  }

  /** known is the current verdict on an owner: true, false, or undefined (not read, or too old). */
  known(owner: RouteOwner): boolean | undefined {
    const verdict = this.verdicts.get(ownerKey(owner));
    return verdict && verdictCurrent(verdict, this.now()) ? verdict.owned : undefined;
  }

  /**
   * check is the verdict on an owner, reading its pool when there is no current one (shared per
   * owner). A read that fails says undefined and is not remembered: the next check reads again.
   */
  check(owner: RouteOwner): Promise<boolean | undefined> {
    const known = this.known(owner);
    if (known !== undefined) return Promise.resolve(known);
    const key = ownerKey(owner);
    const under = this.reads.get(key);
    if (under) return under;
    const read = this.limit(() => this.read(owner)).finally(() => this.reads.delete(key));
    this.reads.set(key, read);
    return read;
  }

  private async read(owner: RouteOwner): Promise<boolean | undefined> {
    let owned: boolean;
    try {
      const pool = await withTimeout(
        this.deps.kube.getPool(owner.namespace, owner.pool),
        READ_MS,
        "a route owner's pool read",
      );
      owned = ownerConfirmed(owner, pool);
    } catch (e) {
      if (!isNotFound(e)) {
        this.deps.log.debug({ err: String(e), pool: owner.pool }, "data plane: a pool read failed");
        return undefined;
      }
      owned = false;
    }
    if (!owned)
      this.deps.log.warn(
        { namespace: owner.namespace, pool: owner.pool },
        "data plane: a pod names a pool that is not there (no route from it)",
      );
    const key = ownerKey(owner);
    this.verdicts.delete(key);
    this.verdicts.set(key, { owned, at: this.now() });
    // The oldest verdicts go first (insertion order): a pool seen again is read again.
    for (const old of this.verdicts.keys()) {
      if (this.verdicts.size <= KEEP) break;
      this.verdicts.delete(old);
    }
    return owned;
  }
}
