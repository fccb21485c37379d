import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { createSandbox } from "../../functions/api/create-sandbox.ts";
import { targetDigests } from "../../functions/digests.ts";
import { writeEgressPolicy } from "../../functions/egress/egress-policy.ts";
import { sweepEgressPolicies } from "../../functions/egress/sweep-policies.ts";
import { completeStopping } from "../../functions/steps/complete-stopping.ts";
import { CreateSandboxRequest } from "../../lib/claims/schemas.ts";
import { parseWith } from "../../lib/crd/parse-with.ts";
import { ORPHAN_GRACE_MS } from "../../lib/egress/orphans.ts";
import { type EgressPolicy, egressPolicyName, POLICY_SELECTOR } from "../../lib/egress/policy.ts";
import { isNotFound } from "../../lib/kube/errors.ts";
import { planStopping } from "../../lib/reconcile/stopping.ts";
import { hostV1, httpsRequest } from "./support/http.ts";
import { kube, recordingClient, until } from "./support/kube.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { isReady, phaseOf, reconcileUntil } from "./support/steps.ts";
import { API_KEYS, tenantPool } from "./support/tenant-pool.ts";

// Issue #38, point 3: a sandbox's egress rules as its own NetworkPolicy, against the real
// apiserver (kwok pods; enforcement is the CNI's, docs/egress.md). The policy is written before
// the create answers and selects exactly the sandbox's pod; a network update replaces it, clearing
// the rules returns the sandbox to the namespace default; the release deletes it before the pod
// is idle again; a create that claims nothing, or whose policy cannot be written, leaves none.

const { cluster } = kube();
const t = tenantPool("egress", "research", 3);
// A namespace whose quota allows no NetworkPolicy: every policy write there fails.
const fenced = tenantPool("egress-quota", "research", 1);
const e2bBase = `https://127.0.0.1:${cluster.hostPort}/e2b`;
const v1 = hostV1(cluster, () => t.key);
const EGRESS = "agentbox.navix.sh/egress";
const ID = "agentbox.navix.sh/sandbox-id";

function e2b(method: string, path: string, key: string, body?: unknown) {
  return httpsRequest(`${e2bBase}${path}`, cluster.caCert, {
    timeoutMs: 90_000,
    method,
    headers: { "content-type": "application/json", "X-API-KEY": key },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** policyOf reads a sandbox's policy, or undefined when the apiserver says 404. */
async function policyOf(ns: string, id: string): Promise<EgressPolicy | undefined> {
  return t.deps.kube.getNetworkPolicy<EgressPolicy>(ns, egressPolicyName(id)).catch((e: unknown) => {
    if (isNotFound(e)) return undefined;
    throw e;
  });
}

/** selected are the names of the pods of `ns` a policy's podSelector picks, by the apiserver's own matching. */
async function selected(ns: string, policy: EgressPolicy): Promise<string[]> {
  const selector = Object.entries(policy.spec.podSelector.matchLabels)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
  return (await t.deps.kube.listPods(ns, selector)).items.map((p) => p.metadata?.name ?? "").sort();
}

const podOf = async (id: string): Promise<V1Pod | undefined> =>
  (await t.pods()).find((p) => p.metadata?.labels?.[ID] === id);

/** cidrs are a policy's granted blocks as "cidr except a,b". */
const cidrs = (policy: EgressPolicy | undefined) =>
  (policy?.spec.egress ?? []).flatMap((r) =>
    r.to.map((p) => [p.ipBlock.cidr, ...(p.ipBlock.except ?? [])].join(" ")),
  );

// A test that fails half-way leaves no sandbox holding a pod the next one waits for.
afterEach(async () => {
  for (const key of [t.key, fenced.key]) {
    const listed = await e2b("GET", "/v2/sandboxes", key);
    if (listed.status !== 200) continue;
    for (const s of JSON.parse(listed.body) as { sandboxID: string }[])
      await e2b("DELETE", `/sandboxes/${s.sandboxID}`, key);
  }
});

describe("a sandbox's own NetworkPolicy", () => {
  it("is written before the E2B create answers and selects exactly the sandbox's pod", async () => {
    await t.allIdle();
    const res = await e2b("POST", "/v2/sandboxes", t.key, {
      templateID: `${t.ns}/p`,
      allow_internet_access: false,
      network: { denyOut: ["8.8.8.0/24"], allowOut: ["1.1.1.1"] },
    });
    expect(res.status, res.body).toBe(201);
    const { sandboxID } = JSON.parse(res.body) as { sandboxID: string };
    // Read at once after the answer: the create wrote it first.
    const policy = await policyOf(t.ns, sandboxID);
    expect(policy?.spec.policyTypes).toEqual(["Egress"]);
    expect(cidrs(policy)).toEqual(["1.1.1.1/32"]);
    const pod = await podOf(sandboxID);
    expect(pod?.metadata?.labels?.[EGRESS]).toBe("custom");
    expect(await selected(t.ns, policy as EgressPolicy)).toEqual([pod?.metadata?.name]);
    // The pool's other pods (idle) are not selected; nor is any pod of another namespace.
    expect((await t.pods()).length).toBe(3);
    expect((await t.deps.kube.listPods(undefined, `${ID}=${sandboxID},${EGRESS}=custom`)).items).toHaveLength(
      1,
    );
    // E2B's detail shows it back, as the SDK's getInfo reads it.
    const got = await e2b("GET", `/sandboxes/${sandboxID}`, t.key);
    expect(JSON.parse(got.body)).toMatchObject({
      allowInternetAccess: false,
      network: { allowOut: ["1.1.1.1"], denyOut: ["8.8.8.0/24", "0.0.0.0/0"] },
    });

    // A network update replaces the rules (policy first), another tenant's is a 404.
    const other = await t.keyOf(`other-${randomBytes(3).toString("hex")}`);
    expect(
      (await e2b("PUT", `/sandboxes/${sandboxID}/network`, other, { denyOut: ["9.9.9.9"] })).status,
    ).toBe(404);
    const put = await e2b("PUT", `/sandboxes/${sandboxID}/network`, t.key, { denyOut: ["9.9.9.9"] });
    expect(put.status, put.body).toBe(204);
    const updated = cidrs(await policyOf(t.ns, sandboxID));
    expect(updated).toHaveLength(2);
    expect(updated[0]).toMatch(/^0\.0\.0\.0\/0 .*9\.9\.9\.9\/32/);
    expect(updated[1]).toMatch(/^::\/0 /);
    const bad = await e2b("PUT", `/sandboxes/${sandboxID}/network`, t.key, { allowOut: ["10.0.0.9"] });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body).message).toMatch(/^allowOut.*10\.0\.0\.9 lies in 10\.0\.0\.0\/8/);

    // Clearing returns the sandbox to the namespace's default: label off, policy gone.
    expect((await e2b("PUT", `/sandboxes/${sandboxID}/network`, t.key, {})).status).toBe(204);
    expect((await podOf(sandboxID))?.metadata?.labels?.[EGRESS]).toBeUndefined();
    expect(await policyOf(t.ns, sandboxID)).toBeUndefined();
    expect(
      JSON.parse((await e2b("GET", `/sandboxes/${sandboxID}`, t.key)).body).allowInternetAccess,
    ).toBeNull();

    // And rules again, then the release: the policy goes, then the pod is idle without the label.
    expect(
      (await e2b("PUT", `/sandboxes/${sandboxID}/network`, t.key, { allow_internet_access: false })).status,
    ).toBe(204);
    expect(cidrs(await policyOf(t.ns, sandboxID))).toEqual([]);
    const name = (await podOf(sandboxID))?.metadata?.name;
    expect((await e2b("DELETE", `/sandboxes/${sandboxID}`, t.key)).status).toBe(204);
    const idle = await until("the pod back to idle", 60_000, async () => {
      const p = (await t.pods()).find((x) => x.metadata?.name === name);
      return p && phaseOf(p) === "idle" && isReady(p) && p;
    });
    expect(await policyOf(t.ns, sandboxID)).toBeUndefined();
    expect(idle.metadata?.labels?.[EGRESS]).toBeUndefined();
    expect(idle.metadata?.labels?.[ID]).toBeUndefined();
    expect(idle.metadata?.annotations?.["agentbox.navix.sh/network"]).toBeUndefined();
  }, 180_000);

  it("takes the official e2b SDK's rules on create and updateNetwork, and getInfo shows them", async () => {
    await t.allIdle();
    const stdout = await runSdkScript("e2b-sdk-network.ts", {
      E2B_API_URL: e2bBase,
      E2B_API_KEY: t.key,
      E2B_TEST_TEMPLATE: `${t.ns}/p`,
      E2B_TEST_DO: "rules",
      E2B_TEST_HOLD: "1",
    });
    const out = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
    expect(out.error).toBeUndefined();
    expect(out.created).toEqual({
      allowInternetAccess: false,
      network: { allowOut: ["1.1.1.1"], denyOut: ["8.8.8.0/24", "0.0.0.0/0"] },
    });
    // The update replaced everything: allowInternetAccess, not repeated, is cleared.
    expect(out.updated).toEqual({
      allowInternetAccess: "unset",
      network: { allowOut: ["1.0.0.1/32"], denyOut: ["9.9.9.9"] },
    });
    expect(out.cleared).toEqual({ allowInternetAccess: "unset", network: "unset" });
    expect(out.domain).toMatch(
      /^SandboxError: 400: allowOut\[0\]: must be a CIDR block .*domain names are not supported/,
    );
    const id = String(out.sandboxId);
    expect(await policyOf(t.ns, id)).toBeUndefined();
    expect((await podOf(id))?.metadata?.labels?.[EGRESS]).toBeUndefined();
    expect((await e2b("DELETE", `/sandboxes/${id}`, t.key)).status).toBe(204);
  }, 180_000);

  it("holds its pod in stopping, label and all, until a read proves the policy gone", async () => {
    await t.allIdle();
    const res = await e2b("POST", "/v2/sandboxes", t.key, {
      templateID: `${t.ns}/p`,
      network: { denyOut: ["1.1.1.1"] },
    });
    expect(res.status, res.body).toBe(201);
    const { sandboxID } = JSON.parse(res.body) as { sandboxID: string };
    const name = egressPolicyName(sandboxID);
    // A finalizer keeps the policy after its delete: the delete "succeeds", the object stays.
    const held = (await policyOf(t.ns, sandboxID)) as EgressPolicy & { metadata: { finalizers?: string[] } };
    await t.deps.kube.replaceNetworkPolicy(t.ns, {
      ...held,
      metadata: { ...held.metadata, finalizers: ["agentbox.test/hold"] },
    });
    const podName = (await podOf(sandboxID))?.metadata?.name ?? "";
    expect((await e2b("DELETE", `/sandboxes/${sandboxID}`, t.key)).status).toBe(204);
    const pool = await t.deps.kube.getPool(t.ns, "p");
    // Wait until its reset is done: the pure decision would now return the pod to idle.
    const stopping = await until("the reset done (planStopping says idle)", 60_000, async () => {
      const p = (await t.pods()).find((x) => x.metadata?.name === podName);
      if (!p || phaseOf(p) !== "stopping") return undefined;
      const planned = planStopping(pool, [p], await targetDigests(t.deps, [p]), new Date());
      return planned.some((a) => a.why.endsWith("pod back to idle")) && p;
    });
    // The step does not: the policy is still there (deleting, held).
    const plan = await completeStopping.plan(t.deps, { pool, pods: [stopping] });
    expect(plan.filter((a) => a.target.name === podName)).toEqual([]);
    const still = await t.deps.kube.getNetworkPolicy<{ metadata: { deletionTimestamp?: string } }>(
      t.ns,
      name,
    );
    expect(still.metadata.deletionTimestamp).toBeDefined();
    const now = (await t.pods()).find((x) => x.metadata?.name === podName);
    expect(now && phaseOf(now)).toBe("stopping");
    expect(now?.metadata?.labels?.[EGRESS]).toBe("custom");
    // Released from its finalizer, the policy goes, and then the pod is idle without the label.
    const current = await t.deps.kube.getNetworkPolicy<
      EgressPolicy & { metadata: { finalizers?: string[] } }
    >(t.ns, name);
    await t.deps.kube.replaceNetworkPolicy(t.ns, {
      ...current,
      metadata: { ...current.metadata, finalizers: [] },
    });
    const idle = await reconcileUntil(t.deps, t.ns, "p", "the pod idle again", async () => {
      const p = (await t.pods()).find((x) => x.metadata?.name === podName);
      return p && phaseOf(p) === "idle" && p;
    });
    expect(await policyOf(t.ns, sandboxID)).toBeUndefined();
    expect(idle.metadata?.labels?.[EGRESS]).toBeUndefined();
  }, 120_000);

  it("is taken by the native API on create and PUT, with 400s naming the field", async () => {
    await t.allIdle();
    const refused = await v1("POST", "/sandboxes", {
      pool: `${t.ns}/p`,
      network: { allowOut: ["example.com"] },
    });
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body).error.fields[0]).toMatchObject({
      path: expect.stringMatching(/^network\.allowOut/),
    });
    const res = await v1("POST", "/sandboxes", { pool: `${t.ns}/p`, network: { denyOut: ["1.1.1.1"] } });
    expect(res.status, res.body).toBe(201);
    const { sandboxId } = JSON.parse(res.body) as { sandboxId: string };
    expect(cidrs(await policyOf(t.ns, sandboxId))[0]).toMatch(/1\.1\.1\.1\/32/);
    // The create's answer and the native GET show the rules as the pod holds them.
    const shown = { denyOut: [expect.stringMatching(/^1\.1\.1\.1(\/32)?$/)] };
    expect(JSON.parse(res.body).network).toEqual(shown);
    expect(JSON.parse((await v1("GET", `/sandboxes/${sandboxId}`)).body).network).toEqual(shown);
    const put = await v1("PUT", `/sandboxes/${sandboxId}/network`, { allowInternetAccess: false });
    expect(put.status, put.body).toBe(200);
    expect(JSON.parse(put.body)).toEqual({ network: { allowInternetAccess: false } });
    expect(JSON.parse((await v1("GET", `/sandboxes/${sandboxId}`)).body).network).toEqual({
      allowInternetAccess: false,
    });
    expect(cidrs(await policyOf(t.ns, sandboxId))).toEqual([]);
    const typo = await v1("PUT", `/sandboxes/${sandboxId}/network`, { allow_out: [] });
    expect(typo.status).toBe(400);
    expect((await v1("PUT", "/sandboxes/sbx-nosuchsandbox/network", {})).status).toBe(404);
    expect((await v1("DELETE", `/sandboxes/${sandboxId}`)).status).toBe(204);
    // Private traffic: the create's answer carries the traffic token, the same E2B's detail shows.
    const priv = await v1("POST", "/sandboxes", {
      pool: `${t.ns}/p`,
      network: { allowPublicTraffic: false },
    });
    expect(priv.status, priv.body).toBe(201);
    const answer = JSON.parse(priv.body) as { sandboxId: string; access?: { trafficAccessToken?: string } };
    expect(answer.access?.trafficAccessToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await policyOf(t.ns, answer.sandboxId)).toBeUndefined();
    const detail = await e2b("GET", `/sandboxes/${answer.sandboxId}`, t.key);
    expect(JSON.parse(detail.body).trafficAccessToken).toBe(answer.access?.trafficAccessToken);
    // The native GET shows it again to the owner, with the setting; an admin key of another team
    // sees the setting but never the token.
    const own = JSON.parse((await v1("GET", `/sandboxes/${answer.sandboxId}`)).body);
    expect(own.network).toEqual({ allowPublicTraffic: false });
    expect(own.access?.trafficAccessToken).toBe(answer.access?.trafficAccessToken);
    const admin = await createApiKey(
      { kube: t.deps.kube, apiKeys: API_KEYS, now: () => new Date() },
      { team: "ops", user: `root-${randomBytes(3).toString("hex")}`, admin: true },
    );
    const seen = await hostV1(cluster, () => admin)("GET", `/sandboxes/${answer.sandboxId}`);
    expect(seen.status, seen.body).toBe(200);
    expect(JSON.parse(seen.body).network).toEqual({ allowPublicTraffic: false });
    expect(JSON.parse(seen.body).access?.trafficAccessToken).toBeUndefined();
    expect(seen.body).not.toContain(answer.access?.trafficAccessToken);
    expect((await v1("DELETE", `/sandboxes/${answer.sandboxId}`)).status).toBe(204);
    await until(
      "the policy gone at release",
      60_000,
      async () => (await policyOf(t.ns, sandboxId)) === undefined,
    );
  }, 120_000);

  it("is taken away again by a create that claims nothing", async () => {
    const requests: string[] = [];
    const deps = { ...t.deps, kube: recordingClient(requests) };
    const tenant = { team: "research", user: "nobody-idle" };
    await t.allIdle();
    // Every pod claimed by a sandbox already: no idle pod, no wait, so the claim fails.
    const holders = await Promise.all([0, 1, 2].map(() => v1("POST", "/sandboxes", { pool: `${t.ns}/p` })));
    for (const h of holders) expect(h.status, h.body).toBe(201);
    const req = parseWith(CreateSandboxRequest, { pool: `${t.ns}/p`, network: { denyOut: ["1.1.1.1"] } });
    if (!req.ok) throw new Error("bad request");
    const outcome = await createSandbox(deps, tenant, req.value);
    expect(outcome).toMatchObject({ ok: false, reason: "exhausted" });
    const base = `/apis/networking.k8s.io/v1/namespaces/${t.ns}/networkpolicies`;
    const created = requests.find((r) => r.startsWith(`POST ${base} 201`));
    expect(created).toBeDefined();
    const deleted = requests.find((r) => r.startsWith(`DELETE ${base}/agentbox-egress-`));
    expect(deleted).toMatch(/ 200$/);
    // The delete was proven: a read that answered 404.
    expect(requests.at(-1)).toMatch(new RegExp(`^GET ${base}/agentbox-egress-\\S+ 404$`));
    expect(requests.indexOf(created ?? "")).toBeLessThan(requests.indexOf(deleted ?? ""));
    expect((await t.deps.kube.listNetworkPolicies(t.ns, POLICY_SELECTOR)).items).toEqual([]);
    for (const h of holders)
      expect(
        (await v1("DELETE", `/sandboxes/${(JSON.parse(h.body) as { sandboxId: string }).sandboxId}`)).status,
      ).toBe(204);
  }, 120_000);

  it("fails the create, claiming nothing, when the policy cannot be written", async () => {
    await kube().core.createNamespacedResourceQuota({
      namespace: fenced.ns,
      body: {
        metadata: { name: "no-policies" },
        spec: { hard: { "count/networkpolicies.networking.k8s.io": "0" } },
      },
    });
    await until("the quota counted", 30_000, async () => {
      const q = await kube().core.readNamespacedResourceQuota({ name: "no-policies", namespace: fenced.ns });
      return q.status?.hard !== undefined;
    });
    await fenced.allIdle();
    const res = await e2b("POST", "/v2/sandboxes", fenced.key, {
      templateID: `${fenced.ns}/p`,
      network: { denyOut: ["1.1.1.1"] },
    });
    expect(res.status, res.body).toBe(500);
    expect(JSON.parse(res.body).message).toMatch(
      /^the sandbox's egress rules could not be applied \(NetworkPolicy .*\): .*exceeded quota.*; nothing was created$/,
    );
    const pods = await fenced.pods();
    expect(pods.map((p) => [phaseOf(p), p.metadata?.labels?.[ID]])).toEqual([["idle", undefined]]);
    // Without rules the same namespace serves creates as before.
    const plain = await e2b("POST", "/v2/sandboxes", fenced.key, { templateID: `${fenced.ns}/p` });
    expect(plain.status, plain.body).toBe(201);
    expect((await e2b("DELETE", `/sandboxes/${JSON.parse(plain.body).sandboxID}`, fenced.key)).status).toBe(
      204,
    );
  }, 120_000);

  it("leftovers are swept once past the grace; a live sandbox's policy stays", async () => {
    await t.allIdle();
    const res = await v1("POST", "/sandboxes", { pool: `${t.ns}/p`, network: { denyOut: ["1.1.1.1"] } });
    expect(res.status, res.body).toBe(201);
    const live = (JSON.parse(res.body) as { sandboxId: string }).sandboxId;
    // A create that crashed between its policy write and its claim leaves this behind.
    const leftover = `sbx-leftover${randomBytes(4).toString("hex")}`;
    await writeEgressPolicy(t.deps, t.ns, leftover, { denyOut: ["1.1.1.1"] });
    const young = await sweepEgressPolicies(t.deps, t.ns);
    expect(young.deleted).toEqual([]);
    const later = { ...t.deps, now: () => new Date(Date.now() + ORPHAN_GRACE_MS + 60_000) };
    const swept = await sweepEgressPolicies(later, t.ns);
    expect(swept.deleted).toEqual([`${t.ns}/${egressPolicyName(leftover)}`]);
    expect(await policyOf(t.ns, leftover)).toBeUndefined();
    expect(await policyOf(t.ns, live)).toBeDefined();
    expect((await v1("DELETE", `/sandboxes/${live}`)).status).toBe(204);
  }, 120_000);
});
