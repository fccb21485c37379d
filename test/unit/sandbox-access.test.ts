import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { e2bDetail, e2bSandbox } from "../../lib/e2b/views.ts";
import { isOwnSandbox, type SandboxView, withAccess } from "../../lib/sandboxes/view.ts";

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
  it("is the sandbox domain when there is one, else null", () => {
    const withDomain = { envdVersion: "0.5.7", domain: "sandbox.example.com" };
    expect(e2bSandbox(pod, view, withDomain, "tok")).toMatchObject({ domain: "sandbox.example.com" });
    expect(e2bDetail(pod, view, withDomain, "tok")).toMatchObject({ domain: "sandbox.example.com" });
    expect(e2bSandbox(pod, view, { envdVersion: "0.5.7" }, "tok")).toMatchObject({ domain: null });
    expect(e2bDetail(pod, view, { envdVersion: "0.5.7" }, "tok")).toMatchObject({ domain: null });
  });
});
