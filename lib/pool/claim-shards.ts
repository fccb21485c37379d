import { SANDBOX_PHASE, SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../api/keys.ts";

/**
 * CLAIM_SHARD_LABEL spreads a pool's pods over CLAIM_SHARDS label values (slot mod CLAIM_SHARDS),
 * so a create can list a few idle pods of one random shard (a small, cheap list) instead of all
 * of them, and concurrent creates mostly look at different pods. It is this project's own label,
 * not part of the agentbox contract; pods without it (adopted from agentbox) are still found by
 * the unsharded fallback.
 */
export const CLAIM_SHARD_LABEL = "agentbox.navix.sh/claim-shard";

/** CLAIM_SHARDS is the number of shards; with 16, a pool of 500 has about 31 pods per shard. */
export const CLAIM_SHARDS = 16;

/** shardOf is the shard of a pod slot. */
export function shardOf(slot: number): string {
  return String(slot % CLAIM_SHARDS);
}

/** shardOrder is every shard once, in an order drawn from random (Fisher-Yates). */
export function shardOrder(random: () => number): string[] {
  const shards = Array.from({ length: CLAIM_SHARDS }, (_, i) => String(i));
  for (let i = shards.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [shards[i], shards[j]] = [shards[j] as string, shards[i] as string];
  }
  return shards;
}

/**
 * candidateSelectors are the label selectors a create lists idle pods of a pool with, in order:
 * every shard once, in random order (small lists, and concurrent creates mostly look at different
 * pods), then pods without a shard label (adopted from agentbox).
 */
export function candidateSelectors(pool: string, random: () => number): string[] {
  const idle = `${SANDBOX_POOL_LABEL}=${pool},${SANDBOX_PHASE_LABEL}=${SANDBOX_PHASE.IDLE}`;
  return [
    ...shardOrder(random).map((shard) => `${idle},${CLAIM_SHARD_LABEL}=${shard}`),
    `${idle},!${CLAIM_SHARD_LABEL}`,
  ];
}
