// Creating a sandbox claims one idle pod with a preconditioned patch; two claims of the same pod
// cannot both win. Many creates run at once (several hosts, no lock), so each caller tries the
// claimable pods in its own random order: they spread over different pods instead of all racing
// for the first one, and a loser simply moves on to its next candidate. Only the pool's own pods
// are candidates (ownedBy): a pod that merely carries the pool label is never claimed.
import type { V1Pod } from "@kubernetes/client-node";
import type { SandboxEnv } from "../crd/sandbox-env.ts";
import type { SandboxPool } from "../crd/sandbox-pool.ts";
import { ownedBy } from "../membership/pod-ownership.ts";
import { claimableState, podFacts } from "../pool/pod-facts.ts";
import { scaleDownPolicyFor } from "../pool/scale-plan.ts";

/**
 * shuffle is an in-place Fisher-Yates shuffle driven by `random` (values in [0, 1), like
 * Math.random), so tests can pass a deterministic one.
 */
function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.min(i, Math.floor(random() * (i + 1)));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

/**
 * claimWindowSeconds is how long after its scale-down mark a pod of `pool` may still be claimed:
 * protectionWindowSeconds of the pool's scale-down policy, resolved exactly as the pool side
 * resolves it (scaleDownPolicyFor: the group's policy of the Env the pool is a member of, given
 * as `env`; the CRD default, 10 s, for any other pool). Seed 002 (PoolScaleDownPolicy): "the
 * time window after a Pod is marked for scale-down ... during which a new Create Sandbox request
 * can still claim it, cancelling the scale-down intent".
 */
function claimWindowSeconds(pool: SandboxPool, env: SandboxEnv | undefined): number {
  return scaleDownPolicyFor(pool, env).protectionWindowSeconds;
}

/**
 * orderCandidates lists the pods a create may claim from `pool`, in the order to try them.
 * Claimable: owned by the pool (ownedBy: a pod that only carries its label is skipped) and in a
 * claimable state (claimableState). A pod marked for scale-down is claimable only while its mark
 * is younger than the pool's protection window (claimWindowSeconds: `env` is the Env the pool is
 * a member of, undefined when none was found; a claim inside the window cancels the
 * scale-down); from the window's end on, the pool deletes it, so it is skipped (the same `>=`
 * boundary as the scale plan). A mark that cannot be parsed never leads to a delete (the plan
 * removes it), so its pod stays claimable, as a marked one.
 *
 * Unmarked pods come first, then marked ones (claiming those undoes a scale-down the pool
 * decided on); each group is shuffled with `random`.
 */
export function orderCandidates(
  pool: SandboxPool,
  pods: readonly V1Pod[],
  now: Date,
  env: SandboxEnv | undefined,
  random: () => number,
): V1Pod[] {
  const protectionWindowSeconds = claimWindowSeconds(pool, env);
  const unmarked: V1Pod[] = [];
  const marked: V1Pod[] = [];
  for (const pod of pods) {
    if (!ownedBy(pod, pool) || !claimableState(pod)) continue;
    const facts = podFacts(pod);
    if (facts.scaleDownMark === undefined) {
      unmarked.push(pod);
      continue;
    }
    const at = facts.scaleDownMarkedAt;
    if (at && (now.getTime() - at.getTime()) / 1000 >= protectionWindowSeconds) continue;
    marked.push(pod);
  }
  return [...shuffle(unmarked, random), ...shuffle(marked, random)];
}

/** Nearest is the lowest-ranked pod of a group pickIdle has seen so far. */
interface Nearest {
  name?: string;
  rank: number;
}

/**
 * pickIdle chooses the pod a create of `pool` takes from a host's feed of idle pods
 * (functions/cache/idle-feed.ts): the same rule as orderCandidates over pods already known to be in
 * a claimable state, by name. Pods the pool does not own (ownedBy) and pods another create of the
 * host holds are skipped; unmarked pods come before marked ones, and a marked pod (markedAt, epoch
 * ms) only inside the pool's protection window (claimWindowSeconds, with the pool's Env as
 * `env`); within each group the lowest `rank` (the pod's distance from the host's home,
 * lib/claims/claim-home.ts), or at random among pods without one.
 */
export function pickIdle(
  pool: SandboxPool,
  idle: Iterable<[string, { pod: V1Pod; markedAt?: number; rank?: number }]>,
  held: ReadonlySet<string>,
  nowMs: number,
  env: SandboxEnv | undefined,
  random: () => number,
): string | undefined {
  const protectionWindowSeconds = claimWindowSeconds(pool, env);
  const unmarked: string[] = [];
  const marked: string[] = [];
  // The nearest ranked pod of each group (ranked pods come before those without a rank).
  const nearest: [Nearest, Nearest] = [
    { rank: Number.POSITIVE_INFINITY },
    { rank: Number.POSITIVE_INFINITY },
  ];
  for (const [name, entry] of idle) {
    if (held.has(name) || !ownedBy(entry.pod, pool)) continue;
    const group = entry.markedAt === undefined ? 0 : 1;
    if (group === 1 && nowMs - (entry.markedAt ?? 0) >= protectionWindowSeconds * 1000) continue;
    const best = nearest[group];
    if (entry.rank !== undefined && entry.rank < best.rank) {
      best.name = name;
      best.rank = entry.rank;
    }
    (group === 0 ? unmarked : marked).push(name);
  }
  const group = unmarked.length > 0 ? 0 : 1;
  const names = group === 0 ? unmarked : marked;
  return nearest[group].name ?? names[Math.min(names.length - 1, Math.floor(random() * names.length))];
}
