import { isLabelValue } from "./label-value.ts";

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
