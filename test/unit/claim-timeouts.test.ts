import { describe, expect, it } from "vitest";
import { claimTimeouts } from "../../lib/claims/claim-timeouts.ts";

// A create's timeouts: its own, else its pool's defaults.

const pool = (spec: { defaultIdleTimeout?: string; defaultStartupTimeout?: string }) => ({
  spec: { replicas: 1, podCreationImagePolicy: "IdleImage" as const, ...spec },
});

describe("claimTimeouts", () => {
  it("takes the pool's defaults for what the request leaves out", () => {
    expect(claimTimeouts(pool({ defaultIdleTimeout: "15m", defaultStartupTimeout: "1m30s" }), {})).toEqual({
      idleTimeoutSeconds: 900,
      startupTimeoutSeconds: 90,
    });
  });

  it("lets the request win, an idleTimeout of 0 meaning none", () => {
    const p = pool({ defaultIdleTimeout: "15m", defaultStartupTimeout: "2m" });
    expect(claimTimeouts(p, { idleTimeout: 60, startupTimeout: 30 })).toEqual({
      idleTimeoutSeconds: 60,
      startupTimeoutSeconds: 30,
    });
    expect(claimTimeouts(p, { idleTimeout: 0 })).toEqual({ startupTimeoutSeconds: 120 });
  });

  it("writes no timeout the pool and the request both leave out, or that is under a second", () => {
    expect(claimTimeouts(pool({}), {})).toEqual({});
    expect(claimTimeouts(pool({ defaultIdleTimeout: "500ms" }), {})).toEqual({});
  });
});
