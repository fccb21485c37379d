import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { runCli } from "./support/cli.ts";
import { ENVS, envObject, TEMPLATES, templateObject } from "./support/envs.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, newNamespace, until, watchPodUntil } from "./support/kube.ts";
import { isReady, poolObject, testDeps } from "./support/steps.ts";

// The triggers of the Node host run by the global setup: audit events (for audit-* namespaces),
// the manual trigger route, and the CLI. Nothing here calls the steps directly.

const { core, custom, kc, cluster } = kube();
const deps = testDeps();
let ns: string; // audit-*: the test host reconciles it on audit events
let manualNs: string; // not audit-*: only the manual triggers below act on it
const cleanups: (() => Promise<void>)[] = [];
const GV = { group: "agents.navix.sh", version: "v1alpha1", plural: "sandboxpools" };

beforeAll(async () => {
  const audit = await newNamespace(core, "audit");
  const manual = await newNamespace(core, "manual");
  ns = audit.ns;
  manualNs = manual.ns;
  cleanups.push(audit.cleanup, manual.cleanup);
});
const template = `trig-${randomBytes(3).toString("hex")}`;
beforeAll(async () => {
  await custom.createClusterCustomObject({
    ...TEMPLATES,
    body: templateObject(template, "v1", "registry.local/sandbox/python:3.12"),
  });
});
afterAll(async () => {
  for (const c of cleanups) await c();
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
  deps.history.close();
});

const podsOf = async (pool: string) =>
  (await core.listNamespacedPod({ namespace: ns, labelSelector: `agentbox.navix.sh/sandbox-pool=${pool}` }))
    .items;

async function untilPods(pool: string, what: string, check: (pods: V1Pod[]) => boolean, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const pods = await podsOf(pool);
    if (check(pods)) return pods;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("audit-driven reconcile", () => {
  it("materialises a new pool and completes a claim from audit events alone (no tick, no manual run)", async () => {
    await custom.createNamespacedCustomObject({ ...GV, namespace: ns, body: poolObject(ns, "driven", 2) });
    const pods = await untilPods(
      "driven",
      "2 ready idle pods",
      (ps) =>
        ps.length === 2 &&
        ps.every((p) => p.metadata?.labels?.["agentbox.navix.sh/sandbox-phase"] === "idle" && isReady(p)),
    );
    const t0 = Date.now();
    const claimed = await claimSandbox(deps, pods[0]!, {
      sandboxId: "sbx-audit",
      containerImages: { sandbox: "registry.local/sandbox/agent:7" },
    });
    expect(claimed.ok).toBe(true);
    const running = await watchPodUntil(
      kc,
      ns,
      pods[0]!.metadata!.name!,
      "running",
      (p) => p.metadata?.labels?.["agentbox.navix.sh/sandbox-phase"] === "running",
    );
    const elapsed = Date.now() - t0;
    expect(running.metadata?.annotations?.["agentbox.navix.sh/started-at"]).toBeDefined();
    // The kubelet's pull delay is the floor; the audit path adds the rest.
    expect(elapsed).toBeGreaterThanOrEqual(cluster.pullDelayMs);
  });
});

describe("audit-driven Env runs", () => {
  it("materialises an Env's members, and reverts a kubectl scale on one, from audit events alone", async () => {
    await custom.createNamespacedCustomObject({
      ...ENVS,
      namespace: ns,
      body: envObject(ns, "audited", template, [{ name: "audited-a", spec: { replicas: 2 } }]),
    });
    await untilPods("audited-a", "2 ready idle pods", (ps) => ps.length === 2 && ps.every(isReady));
    await custom.patchNamespacedCustomObjectScale({
      ...GV,
      namespace: ns,
      name: "audited-a",
      body: [{ op: "replace", path: "/spec/replicas", value: 5 }],
    });
    // The Env's audit-triggered run puts the member's replicas back.
    await until("the kubectl scale reverted", 20_000, async () => {
      const pool = (await custom.getNamespacedCustomObject({
        ...GV,
        namespace: ns,
        name: "audited-a",
      })) as SandboxPool;
      return pool.spec.replicas === 2;
    });
  });
});

describe("manual triggers", () => {
  const url = (path: string) => `https://127.0.0.1:${cluster.hostPort}/functions${path}`;
  const auth = { authorization: `Bearer ${cluster.functionsToken}` };

  it("runs a step over HTTP with the admin token and reports what it did", async () => {
    await custom.createNamespacedCustomObject({
      ...GV,
      namespace: manualNs,
      body: poolObject(manualNs, "manual", 1),
    });
    const res = await httpsRequest(
      url(`/materialise-pool?namespace=${manualNs}&pool=manual`),
      cluster.caCert,
      {
        method: "POST",
        headers: auth,
      },
    );
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body) as { report: { found: boolean; steps: { step: string }[] } };
    expect(body.report.found).toBe(true);
    expect(body.report.steps.map((x) => x.step)).toEqual(["materialise-pool"]);
  });

  it("refuses callers without the token, unknown steps (with the choices) and bad parameters", async () => {
    expect(
      (
        await httpsRequest(url(`/reconcile?namespace=${manualNs}&pool=manual`), cluster.caCert, {
          method: "POST",
        })
      ).status,
    ).toBe(401);
    const wrongToken = await httpsRequest(
      url(`/reconcile?namespace=${manualNs}&pool=manual`),
      cluster.caCert,
      {
        method: "POST",
        headers: { authorization: `Bearer ${cluster.callbackToken}` },
      },
    );
    expect(wrongToken.status).toBe(401);
    const unknown = await httpsRequest(url(`/explode?namespace=${manualNs}&pool=manual`), cluster.caCert, {
      method: "POST",
      headers: auth,
    });
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body).error.choices).toContain("complete-starting");
    const bad = await httpsRequest(url("/reconcile?namespace=Not_A_Name"), cluster.caCert, {
      method: "POST",
      headers: auth,
    });
    expect(bad.status).toBe(400);
    const fields = (JSON.parse(bad.body).error.fields as { path: string }[]).map((f) => f.path);
    expect(fields).toEqual(expect.arrayContaining(["namespace", "pool"]));
  });

  it("runs the Env step over HTTP and from the CLI", async () => {
    await custom.createNamespacedCustomObject({
      ...ENVS,
      namespace: manualNs,
      body: envObject(manualNs, "manual-env", template, [{ name: "manual-env-a", spec: { replicas: 1 } }]),
    });
    const res = await httpsRequest(
      url(`/reconcile-env?namespace=${manualNs}&env=manual-env`),
      cluster.caCert,
      {
        method: "POST",
        headers: auth,
      },
    );
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body) as {
      report: { found: boolean; outcomes: { op: string; result: string }[] };
    };
    expect(body.report.outcomes).toContainEqual(expect.objectContaining({ op: "create", result: "done" }));
    const bad = await httpsRequest(url(`/reconcile-env?namespace=${manualNs}`), cluster.caCert, {
      method: "POST",
      headers: auth,
    });
    expect(bad.status).toBe(400);
    const { stdout, code } = await runCli([
      "reconcile-env",
      `${manualNs}/manual-env`,
      "--cluster-id",
      "local",
      "--kubeconfig",
      cluster.kubeconfig,
      "--history",
      ":memory:",
    ]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/done\s+SandboxEnv\/.+\/manual-env\s+status: 1 member\(s\)/);
  });

  it("the CLI runs the steps and prints what they did", async () => {
    await custom.createNamespacedCustomObject({
      ...GV,
      namespace: manualNs,
      body: poolObject(manualNs, "cli", 1),
    });
    const { stdout, code } = await runCli([
      "reconcile",
      `${manualNs}/cli`,
      "--step",
      "materialise-pool",
      "--kubeconfig",
      cluster.kubeconfig,
      "--history",
      ":memory:",
    ]);
    expect(code).toBe(0);
    expect(stdout).toContain("materialise-pool:");
    expect(stdout).toMatch(/done\s+Pod\/.*\/cli-0\s+create pod in slot 0/);
  });
});
