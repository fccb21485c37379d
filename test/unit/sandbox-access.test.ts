import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { ownerToken, viewWithAccess } from "../../functions/api/sandbox-access.ts";
import { isOwnSandbox, type SandboxView, sandboxDetail, withAccess } from "../../lib/claims/sandbox-view.ts";
import { envdAccessToken, importSealKeys, trafficAccessToken } from "../../lib/claims/sealing.ts";
import { checkSandboxDomain } from "../../lib/data-plane/sandbox-domain.ts";
import { e2bDetail, e2bSandbox, UNSET_SANDBOX_DOMAIN } from "../../lib/e2b/answers.ts";
import { networkMarks } from "../../lib/egress/network.ts";

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
    expect(withAccess(view, "sandbox.example.com", { envdAccessToken: "tok" })).toEqual({
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
    expect(withAccess(view, "sandbox.example.com", {}).access).toEqual({
      domain: "sandbox.example.com",
      urlPattern: "https://{port}-sbx-abc.sandbox.example.com",
      envdUrl: "https://49983-sbx-abc.sandbox.example.com",
    });
    expect(withAccess(view, undefined, { envdAccessToken: "tok" }).access).toEqual({
      envdAccessToken: "tok",
    });
    expect(withAccess(view, undefined, { trafficAccessToken: "t" }).access).toEqual({
      trafficAccessToken: "t",
    });
    expect(withAccess(view, undefined, { envdAccessToken: undefined })).toEqual(view);
  });
});

/** podWith is a claimed pod carrying the marks a claim writes for `network` (networkMarks). */
const podWith = (network: Parameters<typeof networkMarks>[0]) =>
  ({ metadata: { annotations: networkMarks(network).annotations } }) as V1Pod;

describe("sandboxDetail", () => {
  it("shows the network settings the pod holds, as the create asked for them", () => {
    const pod = podWith({ allowOut: ["10.1.0.0/16"], denyOut: ["0.0.0.0/0"], allowPublicTraffic: false });
    expect(sandboxDetail(pod, view, undefined, {})).toEqual({
      ...view,
      network: { allowOut: ["10.1.0.0/16"], denyOut: ["0.0.0.0/0"], allowPublicTraffic: false },
    });
    expect(sandboxDetail(podWith({ allowInternetAccess: false }), view, undefined, {}).network).toEqual({
      allowInternetAccess: false,
    });
  });

  it("shows {} for a sandbox with the namespace's defaults, or an unreadable annotation", () => {
    expect(sandboxDetail(podWith(undefined), view, undefined, {}).network).toEqual({});
    const garbled = { metadata: { annotations: { ...networkMarks({ denyOut: ["1.2.3.4"] }).annotations } } };
    for (const k of Object.keys(garbled.metadata.annotations)) garbled.metadata.annotations[k] = "{";
    expect(sandboxDetail(garbled as V1Pod, view, undefined, {}).network).toEqual({});
  });

  it("keeps `access` as withAccess makes it, and none when there is nothing to say", () => {
    const pod = podWith(undefined);
    expect(sandboxDetail(pod, view, "sandbox.example.com", { trafficAccessToken: "t" }).access).toEqual(
      withAccess(view, "sandbox.example.com", { trafficAccessToken: "t" }).access,
    );
    expect(sandboxDetail(pod, view, undefined, {})).not.toHaveProperty("access");
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
    const pod = podWith(undefined);
    expect(await ownerToken(deps, owner, pod, view)).toBe(token);
    expect(await ownerToken(deps, { ...owner, admin: true }, pod, view)).toBe(token);
    expect(await ownerToken(deps, admin, pod, view)).toBeUndefined();
    expect(await ownerToken(deps, { team: "research", user: "bob" }, pod, view)).toBeUndefined();
    // A resumed sandbox (incarnation 2) has another token, the one its envd was given.
    const resumed = {
      ...pod,
      metadata: {
        ...pod.metadata,
        annotations: { ...pod.metadata?.annotations, "agentbox.navix.sh/incarnation": "2" },
      },
    };
    const second = await ownerToken(deps, owner, resumed, view);
    expect(second).toBe(await envdAccessToken(keys, view.sandboxId, 2));
    expect(second).not.toBe(token);
    expect((await viewWithAccess(deps, owner, pod, view, "sandbox.example.com")).access).toMatchObject({
      envdAccessToken: token,
    });
    expect((await viewWithAccess(deps, admin, pod, view, "sandbox.example.com")).access).not.toHaveProperty(
      "envdAccessToken",
    );
  });

  it("give a private sandbox's traffic token to its owner only, with its network", async () => {
    const keys = await importSealKeys("k".repeat(32));
    const deps = { postStart: { keys, fetch, retryDelaysMs: [], attemptTimeoutMs: 1, deadlineSeconds: 1 } };
    const traffic = await trafficAccessToken(keys, view.sandboxId);
    const privatePod = podWith({ denyOut: ["0.0.0.0/0"], allowPublicTraffic: false });
    const mine = await viewWithAccess(deps, owner, privatePod, view, undefined);
    expect(mine.network).toEqual({ denyOut: ["0.0.0.0/0"], allowPublicTraffic: false });
    expect(mine.access).toEqual({
      envdAccessToken: await envdAccessToken(keys, view.sandboxId),
      trafficAccessToken: traffic,
    });
    expect(traffic).not.toBe(mine.access?.envdAccessToken);
    // An admin key of another tenant sees the settings, never a credential into the sandbox.
    const admins = await viewWithAccess(deps, admin, privatePod, view, "sandbox.example.com");
    expect(admins.network).toEqual(mine.network);
    expect(admins.access).not.toHaveProperty("trafficAccessToken");
    expect(admins.access).not.toHaveProperty("envdAccessToken");
    // Public ports need no traffic token: none is given, even to the owner.
    const open = await viewWithAccess(deps, owner, podWith({ allowPublicTraffic: true }), view, undefined);
    expect(open.access).not.toHaveProperty("trafficAccessToken");
  });

  it("give none without the sealing key", async () => {
    const pod = podWith({ allowPublicTraffic: false });
    expect(await ownerToken({ postStart: undefined }, owner, pod, view)).toBeUndefined();
    expect(await viewWithAccess({ postStart: undefined }, owner, pod, view, undefined)).toEqual({
      ...view,
      network: { allowPublicTraffic: false },
    });
  });
});
