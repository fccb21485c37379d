import { describe, expect, it } from "vitest";
import { historyScope, mayReadRecord } from "../../lib/claims/history-scope.ts";

// Whose history a tenant sees: the list's filter (historyScope) and one record read by its key
// (mayReadRecord: a sandbox page, an ended sandbox's metrics) follow one rule.
describe("mayReadRecord", () => {
  const tenant = { team: "t1", user: "u1" };
  it("lets a tenant read its own team and user's record only", () => {
    expect(mayReadRecord(tenant, { team: "t1", user: "u1" })).toBe(true);
    expect(mayReadRecord(tenant, { team: "t1", user: "u2" })).toBe(false);
    expect(mayReadRecord(tenant, { team: "t2", user: "u1" })).toBe(false);
    // A record that names no owner is no tenant's.
    expect(mayReadRecord(tenant, {})).toBe(false);
  });

  it("lets an admin read any record, as its history list carries no filter", () => {
    const admin = { ...tenant, admin: true };
    expect(historyScope(admin)).toEqual({});
    for (const record of [{ team: "t2", user: "u9" }, {}]) expect(mayReadRecord(admin, record)).toBe(true);
  });

  it("agrees with the list's filter for a tenant", () => {
    expect(historyScope(tenant)).toEqual({ team: "t1", user: "u1" });
  });
});
