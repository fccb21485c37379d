import type { V1Pod } from "@kubernetes/client-node";
import { countsAsDemand, type OwnClaim, teamHeld } from "../../lib/claims/team-limits.ts";
import { SANDBOX_PHASE, SANDBOX_PHASE_LABEL, TEAM_LABEL } from "../../lib/crd/keys.ts";
import { SharedReads } from "../../lib/util/shared-read.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * teamPods lists the sandboxes a team holds (its pods starting or running and not being deleted,
 * in every namespace, as "namespace/name") from the apiserver's watch cache: a cap is a guard
 * against draining shared pools, so a list a moment old is good enough; TeamHolds adds what this
 * host claimed since.
 */
export async function teamPods(deps: Pick<HostDeps, "kube">, team: string): Promise<string[]> {
  const selector = `${TEAM_LABEL}=${team},${SANDBOX_PHASE_LABEL} in (${SANDBOX_PHASE.STARTING},${SANDBOX_PHASE.RUNNING})`;
  const pods = (await deps.kube.listPods(undefined, selector, { cached: true })).items;
  // A pod being deleted serves its team no longer.
  return pods.filter((p) => !p.metadata?.deletionTimestamp).map(podKey);
}

const podKey = (pod: V1Pod) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;

/** teamSandboxes counts the sandboxes a team holds (teamPods). */
export async function teamSandboxes(deps: Pick<HostDeps, "kube">, team: string): Promise<number> {
  return (await teamPods(deps, team)).length;
}

/** HELD_SHARE_MS: how long this host's limit checks of one team share one list of its pods. */
export const HELD_SHARE_MS = 250;
/** FORGET_MS: a won claim is forgotten this long after it was won (the lists show it by then). */
const FORGET_MS = 30_000;

/** Checked is what a claim under a team limit did: ran (its answer), or found the team at its limit. */
export type Checked<T> = { ok: true; value: T } | { ok: false; held: number };

/**
 * TeamHolds keeps a host's team limits honest while its creates claim concurrently and late (a
 * create that waited minutes claims long after its first check): each claim is checked against
 * the team's count at that moment, and counted as held from the check on. The count is a list of
 * the team's pods shared by the host's checks for HELD_SHARE_MS, plus this host's claims that list
 * may not show (teamHeld). It also counts, per team, the host's waiting creates counted as demand
 * (countsAsDemand), so a team at its limit does not grow pools. What it holds is this process's
 * open claims and waits, never a source of truth: other hosts' claims are seen once the watch cache
 * shows them.
 */
export class TeamHolds {
  private readonly reads: SharedReads<{ at: number; pods: Set<string> }>;
  private readonly own = new Map<string, Set<OwnClaim>>();
  private readonly waiting = new Map<string, number>();
  private readonly deps: Pick<HostDeps, "kube">;
  private readonly now: () => number;

  constructor(deps: Pick<HostDeps, "kube">, now: () => number = Date.now) {
    this.deps = deps;
    this.now = now;
    this.reads = new SharedReads(HELD_SHARE_MS, now);
  }

  /** held is what the team holds now, this host's claims under way included. */
  async held(team: string): Promise<number> {
    const read = await this.read(team);
    return teamHeld(read.pods, read.at, this.claimsOf(team));
  }

  /**
   * claim runs `run` unless the team is at `limit` now. The check and the count of the claim as
   * under way happen in one step, so no other check of this host slips between them; a claim that
   * wins a pod (`podOf` says which) stays counted until the lists show it.
   */
  async claim<T>(
    team: string,
    limit: number,
    run: () => Promise<T>,
    podOf: (value: T) => V1Pod | undefined,
  ): Promise<Checked<T>> {
    const read = await this.read(team);
    const claims = this.claimsOf(team);
    const held = teamHeld(read.pods, read.at, claims);
    if (held >= limit) return { ok: false, held };
    const mine: OwnClaim = {};
    claims.add(mine);
    try {
      const value = await run();
      const pod = podOf(value);
      if (pod === undefined) claims.delete(mine);
      else Object.assign(mine, { pod: podKey(pod), at: this.now() });
      return { ok: true, value };
    } catch (e) {
      claims.delete(mine);
      throw e;
    }
  }

  /**
   * demand counts a create of the team that is about to wait as demand when countsAsDemand says
   * so: it answers the function to call when the wait ends, or undefined (not counted).
   */
  demand(team: string, limit: number | undefined, held: number): (() => void) | undefined {
    const counted = this.waiting.get(team) ?? 0;
    if (!countsAsDemand(limit, held, counted)) return undefined;
    this.waiting.set(team, counted + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const n = (this.waiting.get(team) ?? 1) - 1;
      if (n > 0) this.waiting.set(team, n);
      else this.waiting.delete(team);
    };
  }

  private read(team: string): Promise<{ at: number; pods: Set<string> }> {
    return this.reads.get(team, async () => {
      const at = this.now();
      return { at, pods: new Set(await teamPods(this.deps, team)) };
    });
  }

  /** claimsOf is the team's claims of this host, won ones older than FORGET_MS dropped. */
  private claimsOf(team: string): Set<OwnClaim> {
    const claims = this.own.get(team) ?? new Set<OwnClaim>();
    const now = this.now();
    for (const c of claims) if (c.at !== undefined && now - c.at > FORGET_MS) claims.delete(c);
    this.own.set(team, claims);
    return claims;
  }
}
