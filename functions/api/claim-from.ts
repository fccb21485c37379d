import type { V1Pod } from "@kubernetes/client-node";
import { orderCandidates } from "../../lib/claims/candidates.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { idleSelector, selectorsAfterFirst, shardOrder } from "../../lib/pool/claim-shards.ts";
import { UNSUITABLE } from "../cache/idle-dispatch.ts";
import type { HostDeps } from "../host-deps.ts";
import { listCandidates, type TargetReads } from "./resolve-pool.ts";

/**
 * Claim tries one pod of a pool for this create: undefined when it lost the race, UNSUITABLE when
 * the request does not fit the pool (either way: try another); it throws when the apiserver failed.
 */
export type Claim = (pod: V1Pod) => Promise<V1Pod | undefined | typeof UNSUITABLE>;

/**
 * LOSSES_BEFORE_FRESH_LOOK is how many claims in a row a create may lose on cached lists before
 * it reads the pool's idle pods afresh. Lists come from the apiserver's watch cache (cheap, but
 * behind during a burst: it shows pods other creates have just claimed); a few lost races say the
 * cache is stale, and one consistent list then says whether any idle pod is left at all.
 */
export const LOSSES_BEFORE_FRESH_LOOK = 4;

/**
 * DRAINED_HINT_MS is how long a fresh look that found a pool drained makes this host's next
 * creates for it start with a fresh look of their own (a hint only: each still reads).
 */
export const DRAINED_HINT_MS = 2000;

/** FRESH_PAGE is the page size of a fresh look: large, since a host's creates share each look. */
export const FRESH_PAGE = 256;

/**
 * ClaimFromResult is the pod won, or why none: the pool drained, contention past the deadline, or
 * the host's shutdown.
 */
export interface ClaimFromResult {
  pod?: V1Pod;
  tried: number;
  /** contended: idle pods remained, but others won every race until `deadline`. */
  contended?: boolean;
  /** stopping: the host's shutdown grace ended (deps.stopping) before a claim was won. */
  stopping?: boolean;
}

/**
 * claimFrom lists the idle pods of a random group of the pool's claim shards, orders the
 * claimable ones the pool owns (shuffled, so concurrent creates pick different pods; a pod that
 * only carries the pool's labels is never tried: ownedBy) and tries them one by one with the
 * preconditioned claim patch; a lost race moves on to the next candidate, an exhausted
 * group to the next, larger one. After LOSSES_BEFORE_FRESH_LOOK lost races in a row, or when the
 * cached groups are used up, it lists the pool's idle pods consistently (not from the cache) and
 * goes on with those. It answers "none" only from such a fresh look that shows no idle pod (a
 * burst larger than the pool fails fast, and never while pods remain); a request that does not
 * fit the pool ends at once; contention past `deadline` (epoch ms) ends with `contended`, and the
 * host's shutdown (deps.stopping, ADR 0029) with `stopping` before the next claim: a claim made
 * then would be cut with its connection, the caller never learning of its sandbox. Fresh
 * looks are shared by the host's creates of the moment (deps.freshLooks), never one that began
 * before the create asked, and for DRAINED_HINT_MS after one found the pool drained this host's
 * creates for it start with a fresh look. `first` is a pool target's first shard, listed
 * alongside the pool read (see readTarget). `env` is the Env the pool is a member of (undefined
 * when it is none, or was not found): its group's scale-down policy says how long a pod marked
 * for scale-down may still be claimed, as it says when the pool deletes it (orderCandidates).
 */
export async function claimFrom(
  deps: HostDeps,
  pool: SandboxPool,
  claim: Claim,
  deadline: number,
  first?: TargetReads,
  env?: SandboxEnv,
): Promise<ClaimFromResult> {
  const namespace = pool.metadata?.namespace ?? "";
  const name = pool.metadata?.name ?? "";
  const now = deps.now();
  const { shards = shardOrder(deps.random), firstPage } = first ?? {};
  const selectors = selectorsAfterFirst(name, shards, firstPage !== undefined, pool.status?.idleReplicas);
  const key = `${namespace}/${name}`;
  // The idle pods of a consistent list, page by page until a page has claimable ones (pods not
  // Ready or marked for scale-down fill whole pages during a scale-up): none at all, the pool is
  // drained. Creates of this host that look at the same moment share one list that started after
  // they asked (deps.freshLooks); each orders what it shows in its own random order.
  const listIdle = async (): Promise<V1Pod[]> => {
    let next: string | undefined;
    do {
      const page = await deps.kube.listPods(namespace, idleSelector(name), {
        limit: FRESH_PAGE,
        ...(next ? { continue: next } : {}),
      });
      if (orderCandidates(pool, page.items, deps.now(), env, () => 0).length > 0) return page.items;
      next = page.continue;
    } while (next);
    return [];
  };
  const fresh = async () =>
    orderCandidates(
      pool,
      await (deps.freshLooks ? deps.freshLooks.get(key, listIdle) : listIdle()),
      deps.now(),
      env,
      deps.random,
    );
  // What this host last saw of the pool afresh: drained, by a read that started at or after `t`.
  const drainedSince = (t: number) => {
    const looked = deps.freshLooks.latest(key);
    return looked !== undefined && looked.value.length === 0 && looked.at >= t;
  };
  // Found drained a moment ago: start with a fresh look, not with the cache's stale candidates.
  const pages: (() => Promise<V1Pod[]>)[] = drainedSince(now.getTime() - DRAINED_HINT_MS)
    ? []
    : [
        ...(firstPage ? [async () => firstPage] : []),
        ...selectors.map((selector) => () => listCandidates(deps, namespace, selector)),
      ];
  let tried = 0;
  let lost = 0;
  // This host's feed of the pool's idle pods (ADR 0024): each candidate handed to one create at
  // a time, no list. Lost races past LOSSES_BEFORE_FRESH_LOOK, or a feed with nothing to give,
  // go on to a fresh look, as with the cached lists it replaces.
  // A create with a first page of its own does not wait for a feed still making its first list.
  const fed = firstPage
    ? deps.idleFeed?.ready(namespace, name)
    : await deps.idleFeed?.settled(namespace, name);
  const feed = pages.length > 0 && fed ? deps.idleFeed : undefined;
  if (feed) {
    pages.length = 0;
    for (let taken = feed.take(pool, deps.now(), deps.random, env); taken; ) {
      if (deps.stopping.aborted) {
        taken.settle("kept");
        return { tried, stopping: true };
      }
      if (deps.now().getTime() >= deadline) {
        taken.settle("kept");
        return { tried, contended: true };
      }
      tried++;
      const won = await claim(taken.pod).catch((e: unknown) => {
        taken?.settle("kept");
        throw e;
      });
      taken.settle(won === UNSUITABLE ? "kept" : won ? "won" : "lost");
      if (won === UNSUITABLE) return { tried };
      if (won) return { pod: won, tried };
      if (++lost >= LOSSES_BEFORE_FRESH_LOOK) break;
      taken = feed.take(pool, deps.now(), deps.random, env);
    }
    lost = 0;
  }
  for (;;) {
    const cached = pages.shift();
    const listedAt = deps.now().getTime();
    // Out of cached pages (or told to look afresh): only a fresh look may say "none".
    const candidates = cached ? orderCandidates(pool, await cached(), now, env, deps.random) : await fresh();
    if (!cached && candidates.length === 0) return { tried };
    for (const pod of candidates) {
      if (deps.stopping.aborted) return { tried, stopping: true };
      if (deps.now().getTime() >= deadline) return { tried, contended: true };
      // Another create of this host found the pool drained since this page was listed: its pods
      // are gone, so look afresh (with it) rather than lose races for them.
      if (drainedSince(listedAt)) {
        pages.length = 0;
        break;
      }
      tried++;
      const won = await claim(pod);
      if (won === UNSUITABLE) return { tried }; // the request does not fit this pool's pods
      if (won) return { pod: won, tried };
      if (++lost < LOSSES_BEFORE_FRESH_LOOK) continue;
      // The cache is behind: look afresh, and go on with what that shows.
      lost = 0;
      pages.length = 0;
      break;
    }
  }
}
