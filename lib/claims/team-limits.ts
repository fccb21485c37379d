import { isLabelValue } from "../kube/label-value.ts";

/**
 * TeamLimits cap how many sandboxes each team may hold at once (starting or running), so one
 * team cannot drain a pool it shares with others: `all` for every team, `teams` per team (0 there
 * lifts the cap for that team). Unset, nothing is capped.
 */
export interface TeamLimits {
  all?: number;
  teams: Readonly<Record<string, number>>;
}

/**
 * parseTeamLimits reads the settings: `all` a whole number (0 or empty: no cap), `perTeam` a list
 * `team=n,team2=m`. Errors name the part that is wrong.
 */
export function parseTeamLimits(
  all: string | undefined,
  perTeam: string | undefined,
): { ok: true; value: TeamLimits | undefined } | { ok: false; error: string } {
  const count = (text: string) => (/^\d{1,6}$/.test(text) ? Number(text) : undefined);
  const base = all?.trim() ? count(all.trim()) : 0;
  if (base === undefined) return { ok: false, error: `"${all}" is not a whole number of sandboxes` };
  const teams = new Map<string, number>();
  for (const part of (perTeam ?? "")
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [team = "", n = "", ...rest] = part.split("=");
    const limit = count(n.trim());
    if (rest.length > 0 || !isLabelValue(team.trim()) || limit === undefined)
      return { ok: false, error: `"${part}" is not team=count (a team name, a whole number)` };
    teams.set(team.trim(), limit);
  }
  if (base === 0 && teams.size === 0) return { ok: true, value: undefined };
  return { ok: true, value: { ...(base > 0 ? { all: base } : {}), teams: Object.fromEntries(teams) } };
}

/** limitFor is the team's cap, or undefined when it has none. */
export function limitFor(limits: TeamLimits | undefined, team: string): number | undefined {
  if (!limits) return undefined;
  const own = Object.hasOwn(limits.teams, team) ? limits.teams[team] : undefined;
  const limit = own ?? limits.all;
  return limit === undefined || limit === 0 ? undefined : limit;
}

/**
 * CACHE_LAG_MS bounds how long after a claim is written a list from the apiserver's watch cache
 * may still not show it; within it, a host counts its own claim itself.
 */
export const CACHE_LAG_MS = 2000;

/** OwnClaim is one of this host's claims for a team: under way (no `at`), or won `pod` at `at` (epoch ms). */
export interface OwnClaim {
  pod?: string;
  at?: number;
}

/**
 * teamHeld counts what a team holds for its limit: the pods a list begun at `listedAt` showed
 * (by "namespace/name"), plus this host's claims that list may not show: those under way, and
 * those won less than CACHE_LAG_MS before it began (a pod it shows counts once). So a host's own
 * claims never pass a limit, however many of its creates claim at once.
 */
export function teamHeld(listed: ReadonlySet<string>, listedAt: number, own: Iterable<OwnClaim>): number {
  let held = listed.size;
  for (const claim of own) {
    if (claim.at === undefined) held++;
    else if (claim.pod !== undefined && !listed.has(claim.pod) && claim.at > listedAt - CACHE_LAG_MS) held++;
  }
  return held;
}

/**
 * countsAsDemand says whether a create that is about to wait is counted as demand (the pool
 * grows for it): only while its team, with the waiting creates already counted for it, stays
 * under its limit. Past that the create would be refused at its claim, so the pool must not
 * grow for it; it still waits, and takes a pod that turns idle if its team has room by then.
 */
export function countsAsDemand(limit: number | undefined, held: number, counted: number): boolean {
  return limit === undefined || held + counted < limit;
}
