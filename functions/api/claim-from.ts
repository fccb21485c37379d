import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxPool } from "../../lib/api/sandbox-pool.ts";
import {
  CANDIDATES_PER_LIST,
  idleSelector,
  selectorsAfterFirst,
  shardOrder,
} from "../../lib/pool/claim-shards.ts";
import { scaleDownPolicyFor } from "../../lib/pool/scale-plan.ts";
import { orderCandidates } from "../../lib/sandboxes/candidates.ts";
import type { ApiDeps } from "./deps.ts";
import { UNSUITABLE } from "./idle-dispatch.ts";
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
 * claimFrom lists the idle pods of a random group of the pool's claim shards, orders the
 * claimable ones (shuffled, so concurrent creates pick different pods) and tries them one by one
 * with the preconditioned claim patch; a lost race moves on to the next candidate, an exhausted
 * group to the next, larger one, until `budget` attempts are spent. After LOSSES_BEFORE_FRESH_LOOK
 * lost races in a row it lists the pool's idle pods consistently (not from the cache) and goes on
 * with those, and stops at once when that list has none: a burst larger than the pool fails fast
 * instead of spending its budget on pods that are gone. `first` is a pool target's first shard,
 * listed alongside the pool read (see readTarget).
 */
export async function claimFrom(
  deps: ApiDeps,
  pool: SandboxPool,
  claim: Claim,
  budget: number,
  first?: TargetReads,
): Promise<{ pod?: V1Pod; tried: number }> {
  const namespace = pool.metadata?.namespace ?? "";
  const name = pool.metadata?.name ?? "";
  const now = deps.now();
  const window = scaleDownPolicyFor(pool).protectionWindowSeconds;
  const { shards = shardOrder(deps.random), firstPage } = first ?? {};
  const selectors = selectorsAfterFirst(name, shards, firstPage !== undefined, pool.status?.idleReplicas);
  // The claimable idle pods of a consistent list, page by page until a page has some (pods not
  // Ready or marked for scale-down fill whole pages during a scale-up): none at all, the pool is drained.
  const fresh = async (): Promise<V1Pod[]> => {
    let next: string | undefined;
    do {
      const page = await deps.kube.listPods(namespace, idleSelector(name), {
        limit: CANDIDATES_PER_LIST,
        ...(next ? { continue: next } : {}),
      });
      const claimable = orderCandidates(page.items, deps.now(), window, deps.random);
      if (claimable.length > 0) return claimable;
      next = page.continue;
    } while (next);
    return [];
  };
  let pages: (() => Promise<V1Pod[]>)[] = [
    ...(firstPage ? [async () => firstPage] : []),
    ...selectors.map((selector) => () => listCandidates(deps, namespace, selector)),
  ];
  let tried = 0;
  let lost = 0;
  while (pages.length > 0) {
    const [list, ...rest] = pages;
    pages = rest;
    const candidates = orderCandidates((await list?.()) ?? [], now, window, deps.random);
    for (const pod of candidates) {
      if (tried >= budget) return { tried };
      tried++;
      const won = await claim(pod);
      if (won && won !== UNSUITABLE) return { pod: won, tried };
      if (won === UNSUITABLE || ++lost < LOSSES_BEFORE_FRESH_LOOK) continue;
      // The cache is behind: look afresh, and go on with what that shows (nothing: stop).
      lost = 0;
      const idle = await fresh();
      if (idle.length === 0) return { tried };
      pages = [async () => idle];
      break;
    }
  }
  return { tried };
}
