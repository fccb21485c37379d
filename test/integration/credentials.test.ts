import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig, type KubernetesObject, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { reconcileEnv } from "../../functions/runs/reconcile-env.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { reconcileTemplate } from "../../functions/runs/reconcile-template.ts";
import { tick } from "../../functions/runs/tick.ts";
import { readNodeFigures } from "../../functions/usage/node-figures.ts";
import { nodeKubeTransport, nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import { consoleRoutes } from "../../http/console.ts";
import { apply } from "../../infra/cluster/install.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { createTemplateAndEnv, TEMPLATES } from "./support/envs.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { realNode } from "./support/real-node.ts";
import { poolObject, testDeps } from "./support/steps.ts";

// The steps with the least-privilege RBAC of infra/deploy/base/rbac.yaml, reached through the kinds
// of kubeconfig users have: a ServiceAccount token and a client certificate. And without it. The
// sandbox metrics' node grant is the opt-in component's (components/sandbox-metrics/rbac.yaml).

const { core, custom, kc, cluster } = kube();
const base = testDeps();
let ns: string;
let cleanup: () => Promise<void>;
const dir = mkdtempSync(join(tmpdir(), "agentbox-creds-"));
const GV = { group: "agents.navix.sh", version: "v1alpha1", plural: "sandboxpools" };

function kubeconfigWith(user: Record<string, string>): KubeConfig {
  const file = join(dir, `kc-${Math.random().toString(16).slice(2)}.yaml`);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server: cluster.server, "certificate-authority": cluster.caCert } }],
      users: [{ name: "u", user }],
      contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
      "current-context": "x",
    }),
  );
  const out = new KubeConfig();
  out.loadFromFile(file);
  return out;
}

const depsWith = (k: KubeConfig) => ({ ...base, kube: new KubeClient(nodeKubeTransport(k)) });

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "creds"));
  await core.createNamespace({ body: { metadata: { name: "agentbox-system" } } }).catch(() => {});
  // The RBAC files alone: the rest of infra/deploy (the host's Deployment, its webhooks) is not for here.
  for (const file of ["base/rbac.yaml", "components/sandbox-metrics/rbac.yaml"]) {
    const rbac = readFileSync(new URL(`../../infra/deploy/${file}`, import.meta.url), "utf8");
    await apply(
      kc,
      parseAllDocuments(rbac).map((d) => d.toJS() as KubernetesObject),
    );
  }
});
afterAll(async () => {
  await cleanup();
  base.history.close();
});

describe("credentials", () => {
  it("a ServiceAccount token bound by infra/deploy/base/rbac.yaml can run every step", async () => {
    const token = await core.createNamespacedServiceAccountToken({
      name: "agentbox-functions",
      namespace: "agentbox-system",
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const deps = depsWith(kubeconfigWith({ token: token.status?.token ?? "" }));
    await custom.createNamespacedCustomObject({ ...GV, namespace: ns, body: poolObject(ns, "by-token", 2) });
    const report = await reconcilePool(deps, ns, "by-token");
    const outcomes = report.steps.flatMap((s) => s.outcomes);
    expect(outcomes.filter((o) => o.result === "error")).toEqual([]);
    expect(outcomes.filter((o) => o.why.startsWith("create pod"))).toHaveLength(2);

    // The Env step and a tick over Envs (templates, the pull Secrets' names) under the same role.
    const template = `creds-${ns}`;
    await createTemplateAndEnv(ns, template, "by-token-env", [
      { name: "by-token-member", spec: { replicas: 1 } },
    ]);
    const env = await reconcileEnv({ ...deps, clusterId: "local" }, ns, "by-token-env");
    expect(env.outcomes.filter((o) => o.result !== "done")).toEqual([]);
    expect(env.outcomes.map((o) => o.op)).toEqual(["create", "patch-status"]);
    const ticked = await tick(
      { ...deps, clusterId: "local" },
      { namespace: ns, periodMs: 0, jitter: 0, concurrency: 2 },
    );
    expect(ticked).toMatchObject({ failed: 0, envs: 1 });
    // The template step writes the template's status conditions under the same role.
    const templated = await reconcileTemplate(deps, template);
    expect(templated.outcomes.map((o) => `${o.op} ${o.result}`)).toEqual(["patch-status done"]);
    await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template });
  });

  it("the same token reads a node's figures through the node proxy with the sandbox-metrics component", async () => {
    const token = await core.createNamespacedServiceAccountToken({
      name: "agentbox-functions",
      namespace: "agentbox-system",
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const deps = depsWith(kubeconfigWith({ token: token.status?.token ?? "" }));
    // A refused read (403 on nodes or nodes/proxy) throws; the real node's kubelet answers its summary.
    const read = await readNodeFigures(deps.kube, realNode().name, new Date().toISOString(), 10_000);
    expect(read.node.metadata?.name).toBe(realNode().name);
  });

  it("the base role alone may not read nodes nor their kubelets: a 403", async () => {
    const name = "base-only";
    const binding = `agentbox-functions-base-only-${ns}`;
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
    const rbacApi = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbacApi.createClusterRoleBinding({
      body: {
        metadata: { name: binding },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "agentbox-functions" },
        subjects: [{ kind: "ServiceAccount", name, namespace: ns }],
      },
    });
    try {
      const token = await core.createNamespacedServiceAccountToken({
        name,
        namespace: ns,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      });
      const { kube: client } = depsWith(kubeconfigWith({ token: token.status?.token ?? "" }));
      // The binding is in force (the base role lists pods) before its refusals mean anything.
      await until("the base-only binding", 20_000, () =>
        client.listPods(ns, "").then(
          () => true,
          () => false,
        ),
      );
      const refused = await readNodeFigures(client, realNode().name, new Date().toISOString(), 10_000).catch(
        (e: unknown) => e,
      );
      expect(refused).toMatchObject({ kind: "node", status: 403 });
      await expect(client.nodeProxy(realNode().name, "stats/summary")).rejects.toMatchObject({ status: 403 });
    } finally {
      await rbacApi.deleteClusterRoleBinding({ name: binding });
    }
  });

  it("the same token keeps console sessions: sign-in, a page, sign-out (the sessions Secret's grant)", async () => {
    const token = await core.createNamespacedServiceAccountToken({
      name: "agentbox-functions",
      namespace: "agentbox-system",
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const sa = kubeconfigWith({ token: token.status?.token ?? "" });
    const apiKeys = { namespace: "agentbox-system", name: "agentbox-api-keys" };
    const api = { ...depsWith(sa), apiKeys, random: Math.random, watch: nodeKubeWatch(sa) };
    const adminToken = randomBytes(16).toString("hex");
    const app = new Hono().route("/ui", consoleRoutes({ api, adminToken }));
    const origin = "https://console.test";
    const key = await createApiKey({ ...api, now: () => new Date() }, { team: "creds", user: "u" });
    for (const credential of [key, adminToken]) {
      const signin = await app.request(`${origin}/ui/login`, {
        method: "POST",
        headers: { origin, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ credential }).toString(),
      });
      expect(signin.status).toBe(303);
      const cookie = /agentbox_console=([^;]*)/.exec(signin.headers.get("set-cookie") ?? "")?.[1] ?? "";
      expect(cookie).not.toBe(credential);
      const headers = { origin, cookie: `agentbox_console=${cookie}` };
      expect((await app.request(`${origin}/ui/templates`, { headers })).status).toBe(200);
      expect((await app.request(`${origin}/ui/logout`, { method: "POST", headers })).status).toBe(303);
      expect((await app.request(`${origin}/ui/templates`, { headers })).headers.get("location")).toBe(
        "/ui/login",
      );
    }
  });

  it("a client certificate signed by the cluster CA, bound to the same role, works too", async () => {
    const key = join(dir, "user.key");
    const csr = join(dir, "user.csr");
    const crt = join(dir, "user.crt");
    const caKey = cluster.caCert.replace(/ca\.crt$/, "ca.key");
    execFileSync("openssl", ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key]);
    execFileSync("openssl", [
      "req",
      "-new",
      "-key",
      key,
      "-subj",
      "/CN=agentbox-functions-cert",
      "-out",
      csr,
    ]);
    execFileSync("openssl", [
      "x509",
      "-req",
      "-in",
      csr,
      "-CA",
      cluster.caCert,
      "-CAkey",
      caKey,
      "-CAcreateserial",
      "-days",
      "1",
      "-out",
      crt,
    ]);
    await kc.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
      body: {
        metadata: { name: `agentbox-functions-cert-${ns}` },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "agentbox-functions" },
        subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: "agentbox-functions-cert" }],
      },
    });
    const deps = depsWith(
      kubeconfigWith({ "client-certificate-data": b64(crt), "client-key-data": b64(key) }),
    );
    await custom.createNamespacedCustomObject({ ...GV, namespace: ns, body: poolObject(ns, "by-cert", 1) });
    const report = await reconcilePool(deps, ns, "by-cert");
    const outcomes = report.steps.flatMap((s) => s.outcomes);
    expect(outcomes.filter((o) => o.result === "error")).toEqual([]);
    expect(outcomes.some((o) => o.why.startsWith("create pod"))).toBe(true);
  });

  it("an identity without the role gets a clear forbidden error, not a crash", async () => {
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "nobody" } } });
    const token = await core.createNamespacedServiceAccountToken({
      name: "nobody",
      namespace: ns,
      body: { spec: { audiences: [] } },
    });
    const deps = depsWith(kubeconfigWith({ token: token.status?.token ?? "" }));
    await expect(reconcilePool(deps, ns, "by-token")).rejects.toThrow(/403 Forbidden/);
  });
});

const b64 = (file: string) => Buffer.from(readFileSync(file)).toString("base64");
