import { describe, expect, it } from "vitest";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { claimHooks, runsEnvd } from "../../lib/lifecycle/post-start-hooks.ts";

// Which post-start hooks a claim gets (issue #35, point 1): envd's /init on every claim of a pool
// that runs envd, env vars or not, whenever the control plane can give it a token.

const pool = (annotations?: Record<string, string>): SandboxPool =>
  ({
    metadata: { namespace: "ns", name: "p" },
    spec: { template: { metadata: annotations ? { annotations } : {}, spec: { containers: [] } } },
  }) as unknown as SandboxPool;

describe("claimHooks", () => {
  it("initialises envd on every claim, with or without env vars", () => {
    expect(claimHooks(pool(), { sealing: true, port: 49983 })).toEqual({
      ok: true,
      hooks: [{ type: "EnvdInit", port: 49983 }],
    });
    expect(claimHooks(pool(), { sealing: true, port: 5000, sealedEnvVars: "s" })).toEqual({
      ok: true,
      hooks: [{ type: "EnvdInit", port: 5000, sealedEnvVars: "s" }],
    });
  });

  it("gives no hook to a pool whose template runs no envd, and refuses env vars there by name", () => {
    const none = pool({ "agentbox.navix.sh/envd": "none" });
    expect(runsEnvd(none)).toBe(false);
    expect(runsEnvd(pool({ "agentbox.navix.sh/envd": "yes" }))).toBe(true);
    expect(claimHooks(none, { sealing: true, port: 49983 })).toEqual({ ok: true, hooks: [] });
    const refused = claimHooks(none, { sealing: true, port: 49983, sealedEnvVars: "s" });
    expect(refused).toMatchObject({ ok: false });
    expect(!refused.ok && refused.message).toMatch(/^envVars: pool ns\/p runs no envd/);
  });

  it("adds no hook without a sealing key: there is no token to give", () => {
    expect(claimHooks(pool(), { sealing: false, port: 49983 })).toEqual({ ok: true, hooks: [] });
  });

  it("follows the claimed pod's own annotation: a pod made before its template changed runs what it was made with", () => {
    const made = (annotations: Record<string, string>) => ({ metadata: { annotations } }) as never;
    const none = pool({ "agentbox.navix.sh/envd": "none" });
    // The template now says none, the pod was made with envd: it is initialised.
    expect(claimHooks(none, { sealing: true, port: 49983 }, made({}))).toEqual({
      ok: true,
      hooks: [{ type: "EnvdInit", port: 49983 }],
    });
    // The template now runs envd, the pod was made without: no hook that could never succeed.
    expect(
      claimHooks(pool(), { sealing: true, port: 49983 }, made({ "agentbox.navix.sh/envd": "none" })),
    ).toEqual({
      ok: true,
      hooks: [],
    });
  });
});
