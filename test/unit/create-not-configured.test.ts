import { describe, expect, it } from "vitest";
import { createSandbox } from "../../functions/api/create-sandbox.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { notConfigured } from "../../lib/claims/errors.ts";

describe("an Env create on a host without a cluster ID", () => {
  it("is answered at once as not configured (501, naming the setting), never a 503 to retry", async () => {
    // No request is made: the deps have no client to make one with.
    const deps = { now: () => new Date() } as unknown as HostDeps;
    const outcome = await createSandbox(deps, { team: "t", user: "u" }, { env: "ns/e", waitTimeout: 30 });
    expect(outcome).toEqual({
      ok: false,
      reason: "not-configured",
      message: expect.stringContaining("AGENTBOX_CLUSTER_ID"),
    });
    expect(notConfigured("x")).toEqual({
      status: 501,
      body: { error: { code: "NotConfigured", message: "x" } },
    });
  });
});
