// Concurrent creates must not all race for the same few idle pods. Lists served from the
// apiserver's cache return matches in name order up to `limit`, so creates that list the same
// selector see the same first pods. Each create therefore lists a random group of shards, sized
// so that the whole group fits in one page; creates then spread over the whole pool. A selector
// only finds candidates: labels are anyone's to set, so the pods listed are filtered to those the
// pool owns (orderCandidates, lib/membership/pod-ownership.ts) before any is claimed.
import { SANDBOX_PHASE, SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../crd/keys.ts";

/**
 * CLAIM_SHARD_LABEL spreads a pool's pods over CLAIM_SHARDS label values (slot mod CLAIM_SHARDS).
 * It is this project's own label, not part of the agentbox contract; pods without it (adopted from
 * agentbox) or with values of another shard count are found by the final list of every idle pod.
 */
export const CLAIM_SHARD_LABEL = "agentbox.navix.sh/claim-shard";

/** CLAIM_SHARDS is the number of shards; a pool of 1,000 has about 16 pods per shard. */
export const CLAIM_SHARDS = 64;

/** CANDIDATES_PER_LIST is the page size of a candidate list (the apiserver's limit). */
export const CANDIDATES_PER_LIST = 32;

/** GROUP_TARGET is how many idle pods a shard group should hold: half a page, so pages are rarely cut. */
export const GROUP_TARGET = 16;

/** shardOf is the shard of a pod slot. */
export function shardOf(slot: number): string {
  return String(slot % CLAIM_SHARDS);
}

/** shardOrder is every shard once, in an order drawn from random (Fisher-Yates). */
export function shardOrder(random: () => number): string[] {
  const shards = Array.from({ length: CLAIM_SHARDS }, (_, i) => String(i));
  for (let i = shards.length - 1; i > 0; i--) {
    const j = Math.min(i, Math.floor(random() * (i + 1)));
    [shards[i], shards[j]] = [shards[j] as string, shards[i] as string];
  }
  return shards;
}

/** idleSelector selects a pool's idle pods. */
export function idleSelector(pool: string): string {
  return `${SANDBOX_POOL_LABEL}=${pool},${SANDBOX_PHASE_LABEL}=${SANDBOX_PHASE.IDLE}`;
}

/**
 * groupSize is how many shards one list covers for a pool with about `idle` idle pods (from its
 * status): the nearest to GROUP_TARGET pods, at least one shard, at most all of them.
 */
export function groupSize(idle: number): number {
  const n =
    Number.isFinite(idle) && idle > 0 ? Math.round((GROUP_TARGET * CLAIM_SHARDS) / idle) : CLAIM_SHARDS;
  return Math.min(CLAIM_SHARDS, Math.max(1, n));
}

/**
 * candidateSelectors are the label selectors a create lists a pool's idle pods with, in order.
 * `shards` is the shard order (shardOrder) and `first` how many of them the first list covers;
 * each following list covers twice as many of the rest as the one before, so a pool drained below
 * its status's count (a burst, a stale status) is searched in a few lists. The last selector takes
 * every idle pod: pods without a shard label or with another scheme's values, and whatever the
 * groups' lists were too stale to show.
 */
export function candidateSelectors(pool: string, shards: readonly string[], first: number): string[] {
  const selectors: string[] = [];
  let size = Math.max(1, first);
  for (let at = 0; at < shards.length; at += size, size *= 2)
    selectors.push(shardGroupSelector(pool, shards.slice(at, at + size)));
  return [...selectors, idleSelector(pool)];
}

/**
 * selectorsAfterFirst are the selectors a create lists with after its first page: the shards that
 * page did not cover (the first shard, when it was listed alongside the pool read), in groups sized
 * from the pool's idle count (status.idleReplicas; an unknown count takes every shard at once).
 */
export function selectorsAfterFirst(
  pool: string,
  shards: readonly string[],
  firstListed: boolean,
  idleReplicas: number | undefined,
): string[] {
  return candidateSelectors(
    pool,
    firstListed ? shards.slice(1) : shards,
    groupSize(idleReplicas ?? Number.NaN),
  );
}

/** shardGroupSelector selects a pool's idle pods in a group of shards. */
export function shardGroupSelector(pool: string, group: readonly string[]): string {
  return `${idleSelector(pool)},${CLAIM_SHARD_LABEL} in (${group.join(",")})`;
}
