import { describe, expect, it } from "vitest";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { templateVisibleTo } from "../../lib/claims/visibility.ts";
import type { TemplateVisibility } from "../../lib/crd/sandbox-template.ts";

// Tenants: team ml or ops, user ada or bob.
const ML_ADA: Tenant = { team: "ml", user: "ada" };
const ML_BOB: Tenant = { team: "ml", user: "bob" };
const OPS_ADA: Tenant = { team: "ops", user: "ada" };
const OPS_BOB: Tenant = { team: "ops", user: "bob" };
const ADMIN: Tenant = { team: "ops", user: "bob", admin: true };
const TENANTS = [ML_ADA, ML_BOB, OPS_ADA, OPS_BOB, ADMIN];

// Each row: the visibility, then who sees it, in TENANTS order.
const TABLE: [string, TemplateVisibility | undefined, [boolean, boolean, boolean, boolean, boolean]][] = [
  ["no visibility: public", undefined, [true, true, true, true, true]],
  ["no rules: public", {}, [true, true, true, true, true]],
  ["empty rules: public", { rules: [] }, [true, true, true, true, true]],
  ["team only: any user of the team", { rules: [{ team: "ml" }] }, [true, true, false, false, true]],
  [
    "team with empty users: any user of the team",
    { rules: [{ team: "ml", users: [] }] },
    [true, true, false, false, true],
  ],
  ["users only: those users in any team", { rules: [{ users: ["ada"] }] }, [true, false, true, false, true]],
  [
    "empty team string: any team",
    { rules: [{ team: "", users: ["ada"] }] },
    [true, false, true, false, true],
  ],
  ["team AND users", { rules: [{ team: "ml", users: ["ada"] }] }, [true, false, false, false, true]],
  [
    "several users in a rule",
    { rules: [{ team: "ml", users: ["ada", "bob"] }] },
    [true, true, false, false, true],
  ],
  [
    "rules are ORed",
    {
      rules: [
        { team: "ml", users: ["ada"] },
        { team: "ops", users: ["bob"] },
      ],
    },
    [true, false, false, true, true],
  ],
  ["a rule with neither field matches everyone", { rules: [{}] }, [true, true, true, true, true]],
  ["a rule matching nobody: only admins", { rules: [{ team: "hr" }] }, [false, false, false, false, true]],
  ["user names are exact", { rules: [{ users: ["Ada", "ad"] }] }, [false, false, false, false, true]],
];

describe("templateVisibleTo", () => {
  it.each(TABLE)("%s", (_, visibility, expected) => {
    expect(TENANTS.map((t) => templateVisibleTo(visibility, t))).toEqual(expected);
  });

  it("admin: false is a plain tenant", () => {
    expect(templateVisibleTo({ rules: [{ team: "hr" }] }, { ...OPS_BOB, admin: false })).toBe(false);
  });
});
