import { describe, expect, it } from "vitest";
import { limitFor, parseTeamLimits } from "../../lib/sandboxes/team-limits.ts";

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
