import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { ownerToken, viewWithAccess } from "../../functions/api/sandbox-access.ts";
import { isOwnSandbox, type SandboxView, withAccess } from "../../lib/claims/sandbox-view.ts";
import { envdAccessToken, importSealKeys } from "../../lib/claims/sealing.ts";
import { checkSandboxDomain } from "../../lib/data-plane/sandbox-domain.ts";
import { e2bDetail, e2bSandbox, UNSET_SANDBOX_DOMAIN } from "../../lib/e2b/answers.ts";

const view: SandboxView = {
  sandboxId: "sbx-abc",
  namespace: "ns",
  pool: "p",
  pod: "p-0",
  phase: "running",
  team: "research",
  user: "alice",
  images: { main: "a:1" },
  metadata: {},
};

describe("withAccess", () => {
  it("gives the URL pattern, envd's URL and the token", () => {
    expect(withAccess(view, "sandbox.example.com", "tok")).toEqual({
      ...view,
      access: {
        domain: "sandbox.example.com",
        urlPattern: "https://{port}-sbx-abc.sandbox.example.com",
        envdUrl: "https://49983-sbx-abc.sandbox.example.com",
        envdAccessToken: "tok",
      },
    });
  });

  it("leaves out what it does not have, and `access` when it has nothing", () => {
    expect(withAccess(view, "sandbox.example.com", undefined).access).toEqual({
      domain: "sandbox.example.com",
      urlPattern: "https://{port}-sbx-abc.sandbox.example.com",
      envdUrl: "https://49983-sbx-abc.sandbox.example.com",
    });
    expect(withAccess(view, undefined, "tok").access).toEqual({ envdAccessToken: "tok" });
    expect(withAccess(view, undefined, undefined)).toEqual(view);
  });
});

describe("isOwnSandbox", () => {
  it("is the sandbox's team and user, admin or not", () => {
    expect(isOwnSandbox(view, { team: "research", user: "alice" })).toBe(true);
    expect(isOwnSandbox(view, { team: "research", user: "alice", admin: true })).toBe(true);
    expect(isOwnSandbox(view, { team: "research", user: "bob" })).toBe(false);
    expect(isOwnSandbox(view, { team: "ops", user: "root", admin: true })).toBe(false);
    expect(isOwnSandbox({ ...view, team: undefined, user: undefined }, { team: "", user: "" })).toBe(false);
  });
});

describe("E2B answers' domain", () => {
  const pod = { metadata: { annotations: { "e2b.agentbox.dev/template-id": "base" } } } as V1Pod;
  it("is the sandbox domain when there is one, else a reserved name that resolves nowhere, never null", () => {
    const withDomain = { envdVersion: "0.5.7", domain: "sandbox.example.com" };
    expect(e2bSandbox(pod, view, withDomain, "tok")).toMatchObject({ domain: "sandbox.example.com" });
    expect(e2bDetail(pod, view, withDomain, "tok")).toMatchObject({ domain: "sandbox.example.com" });
    // null would make the SDK send envd traffic, token included, to E2B (sandbox.e2b.app).
    expect(e2bSandbox(pod, view, { envdVersion: "0.5.7" }, "tok")).toMatchObject({
      domain: UNSET_SANDBOX_DOMAIN,
    });
    expect(e2bDetail(pod, view, { envdVersion: "0.5.7" }, "tok")).toMatchObject({
      domain: UNSET_SANDBOX_DOMAIN,
    });
    expect(UNSET_SANDBOX_DOMAIN).toMatch(/\.invalid$/);
    expect(checkSandboxDomain(UNSET_SANDBOX_DOMAIN)).toEqual({ ok: true, domain: UNSET_SANDBOX_DOMAIN });
  });

  it("carry envdAccessToken when given one, and no such field otherwise", () => {
    const settings = { envdVersion: "0.5.7", domain: "sandbox.example.com" };
    expect(e2bSandbox(pod, view, settings, "tok")).toMatchObject({ envdAccessToken: "tok" });
    expect(e2bDetail(pod, view, settings, "tok")).toMatchObject({ envdAccessToken: "tok" });
    expect(e2bSandbox(pod, view, settings, undefined)).not.toHaveProperty("envdAccessToken");
    expect(e2bDetail(pod, view, settings, undefined)).not.toHaveProperty("envdAccessToken");
  });
});

describe("ownerToken and viewWithAccess", () => {
  const owner = { team: "research", user: "alice" };
  const admin = { team: "ops", user: "root", admin: true };
  it("give the envd token to the sandbox's owner only, admin keys of other tenants included", async () => {
    const keys = await importSealKeys("k".repeat(32));
    const deps = { postStart: { keys, fetch, retryDelaysMs: [], attemptTimeoutMs: 1, deadlineSeconds: 1 } };
    const token = await envdAccessToken(keys, view.sandboxId);
    expect(await ownerToken(deps, owner, view)).toBe(token);
    expect(await ownerToken(deps, { ...owner, admin: true }, view)).toBe(token);
    expect(await ownerToken(deps, admin, view)).toBeUndefined();
    expect(await ownerToken(deps, { team: "research", user: "bob" }, view)).toBeUndefined();
    expect((await viewWithAccess(deps, owner, view, "sandbox.example.com")).access).toMatchObject({
      envdAccessToken: token,
    });
    expect((await viewWithAccess(deps, admin, view, "sandbox.example.com")).access).not.toHaveProperty(
      "envdAccessToken",
    );
  });

  it("give none without the sealing key", async () => {
    expect(await ownerToken({ postStart: undefined }, owner, view)).toBeUndefined();
    expect(await viewWithAccess({ postStart: undefined }, owner, view, undefined)).toEqual(view);
  });
});
