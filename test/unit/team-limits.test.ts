import { describe, expect, it } from "vitest";
import {
  CACHE_LAG_MS,
  countsAsDemand,
  limitFor,
  parseTeamLimits,
  teamHeld,
} from "../../lib/claims/team-limits.ts";

describe("parseTeamLimits", () => {
  it("reads a cap for all and per-team overrides; nothing set is no cap", () => {
    expect(parseTeamLimits(undefined, undefined)).toEqual({ ok: true, value: undefined });
    expect(parseTeamLimits("0", "")).toEqual({ ok: true, value: undefined });
    expect(parseTeamLimits("20", undefined)).toEqual({ ok: true, value: { all: 20, teams: {} } });
    expect(parseTeamLimits("", " ml=50 , ops=0")).toEqual({ ok: true, value: { teams: { ml: 50, ops: 0 } } });
  });

  it.each([
    ["-1", undefined, '"-1" is not a whole number of sandboxes'],
    ["ten", undefined, '"ten" is not a whole number of sandboxes'],
    [undefined, "ml", '"ml" is not team=count (a team name, a whole number)'],
    [undefined, "ml=x", '"ml=x" is not team=count (a team name, a whole number)'],
    [undefined, "m l=3", '"m l=3" is not team=count (a team name, a whole number)'],
    [undefined, "ml=3=4", '"ml=3=4" is not team=count (a team name, a whole number)'],
  ])("refuses %j / %j, naming the part", (all, perTeam, error) => {
    expect(parseTeamLimits(all, perTeam)).toEqual({ ok: false, error });
  });
});

describe("limitFor", () => {
  const limits = { all: 10, teams: { ml: 50, ops: 0 } };
  it("takes the team's own cap, else the cap for all; 0 lifts it", () => {
    expect(limitFor(limits, "ml")).toBe(50);
    expect(limitFor(limits, "web")).toBe(10);
    expect(limitFor(limits, "ops")).toBeUndefined();
    expect(limitFor(undefined, "ml")).toBeUndefined();
    expect(limitFor({ teams: { ml: 5 } }, "web")).toBeUndefined();
  });

  it("never takes Object.prototype's members for a team's cap", () => {
    expect(limitFor({ teams: {} }, "constructor")).toBeUndefined();
    expect(limitFor({ all: 3, teams: {} }, "toString")).toBe(3);
  });
});

describe("teamHeld", () => {
  const listed = new Set(["ns/a", "ns/b"]);
  const t = 1_000_000;
  it("adds this host's claims under way to what the list shows", () => {
    expect(teamHeld(listed, t, [])).toBe(2);
    expect(teamHeld(listed, t, [{}, {}])).toBe(4);
  });

  it("adds a won claim the list may not show yet, once, and trusts a list begun well after it", () => {
    expect(teamHeld(listed, t, [{ pod: "ns/c", at: t - 10 }])).toBe(3); // too recent for the list
    expect(teamHeld(listed, t, [{ pod: "ns/a", at: t - 10 }])).toBe(2); // the list shows it
    expect(teamHeld(listed, t, [{ pod: "ns/c", at: t - CACHE_LAG_MS - 1 }])).toBe(2); // released since
  });
});

describe("countsAsDemand", () => {
  it("counts a waiting create while its team, with its creates counted already, is under its limit", () => {
    expect(countsAsDemand(undefined, 99, 99)).toBe(true);
    expect(countsAsDemand(2, 0, 1)).toBe(true);
    expect(countsAsDemand(2, 0, 2)).toBe(false);
    expect(countsAsDemand(2, 2, 0)).toBe(false);
  });
});
