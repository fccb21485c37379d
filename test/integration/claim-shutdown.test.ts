import { describe, expect, it } from "vitest";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { phaseOf, poolTest } from "./support/steps.ts";

// A create that reaches its claims after its host's shutdown grace ended (HostDeps.stopping, ADR
// 0029: its request came in before the listener closed, the key check took its time): it claims
// nothing and answers a clean 503 to retry on another host. A claim made then would be cut with
// the connection a moment later, or handed back at once by a create that waits: a sandbox its
// caller may never learn of.

const t = poolTest("claim-shutdown");

describe("a create whose host's shutdown grace has ended", () => {
  it("claims no pod and answers 503 to retry elsewhere", async () => {
    const { deps, app } = inProcessApi(t.deps, { stopping: AbortSignal.abort() });
    const key = await tenantKey(deps, "claim-shutdown");
    await t.readyPool("p", 2);
    for (const wait of [false, true]) {
      const res = await postCreate(app, key, { pool: `${t.ns}/p`, wait });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(
        /this host is shutting down/,
      );
    }
    expect((await t.pods("p")).map(phaseOf)).toEqual(["idle", "idle"]);
  });
});
