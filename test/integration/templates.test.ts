import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { runCli } from "./support/cli.ts";
import { eventsAbout, TEMPLATES, templateObject } from "./support/envs.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, until } from "./support/kube.ts";
import { isReady, phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// Templates fill pools: at creation (the defaulting webhook), later (the copy-template step),
// never silently afterwards (refresh-template, on request only); a pool that cannot render pods
// creates none and says why.

const { core, custom, cluster } = kube();
const t = poolTest("tmpl");
const { deps, pods } = t;
const suffix = randomBytes(3).toString("hex");
const templates: string[] = [];

async function createTemplate(name: string, version: string, image: string) {
  templates.push(name);
  await custom.createClusterCustomObject({ ...TEMPLATES, body: templateObject(name, version, image) });
}
/** namingTemplate creates a pool that names `template` and sets only `spec` besides. */
const namingTemplate = (
  name: string,
  template: string,
  replicas: number,
  spec: Record<string, unknown> = {},
) =>
  custom.createNamespacedCustomObject({
    group: "agents.navix.sh",
    version: "v1alpha1",
    plural: "sandboxpools",
    namespace: t.ns,
    body: {
      apiVersion: "agents.navix.sh/v1alpha1",
      kind: "SandboxPool",
      metadata: { name },
      spec: { replicas, templateName: template, ...spec },
    },
  });
const condition = (pool: SandboxPool, type: string) => pool.status?.conditions?.find((c) => c.type === type);

afterAll(async () => {
  for (const name of templates)
    await custom.deleteClusterCustomObject({ ...TEMPLATES, name }).catch(() => {});
});

describe("templates fill pools", () => {
  it("a pool naming only its template is filled at creation and gets working pods", async () => {
    const template = `tmpl-a-${suffix}`;
    await createTemplate(template, "v1", "registry.local/sandbox/python:3.12");
    await namingTemplate("only-template", template, 2);
    const stored = await t.getPool("only-template");
    expect(stored.spec.template).toEqual(
      templateObject(template, "v1", "registry.local/sandbox/python:3.12").spec.template,
    );
    expect(stored.spec.idleImage).toBe("registry.local/sandbox/idle:1");
    expect(stored.spec.runtimes).toEqual([{ name: "e2b", port: 49983, protocol: "TCP" }]);
    expect(stored.metadata?.annotations).toMatchObject({
      "agentbox.navix.sh/template-name": template,
      "agentbox.navix.sh/template-version": "v1",
      "agentbox.navix.sh/overrides": "{}",
    });
    expect(stored.metadata?.labels?.["sample.agentbox.dev/tier"]).toBe("gold");
    await reconcileUntil(deps, t.ns, "only-template", "2 ready idle pods", async () => {
      const ps = await pods("only-template");
      return ps.length === 2 && ps.every((p) => phaseOf(p) === "idle" && isReady(p));
    });
  });

  it("a pool whose template is missing creates no pods and says why; the template's arrival fills it", async () => {
    const template = `tmpl-late-${suffix}`;
    await namingTemplate("waiting", template, 2);
    await reconcileUntil(deps, t.ns, "waiting", "the ReplicaFailure condition", async () => {
      const pool = await t.getPool("waiting");
      return condition(pool, "ReplicaFailure")?.reason === "TemplateNotFound";
    });
    const pool = await t.getPool("waiting");
    expect(condition(pool, "ReplicaFailure")?.message).toBe(
      `SandboxTemplate "${template}" does not exist; no pods are created until it does`,
    );
    expect(condition(pool, "Scaling")?.message).toMatch(
      /^scaling up from 0 to 2 replicas: SandboxTemplate ".+" does not exist/,
    );
    expect(await pods("waiting")).toHaveLength(0);
    expect((await eventsAbout(core, t.ns, "waiting")).map((e) => `${e.type}/${e.reason}`)).toContain(
      "Warning/TemplateNotFound",
    );

    await createTemplate(template, "v3", "registry.local/sandbox/node:22");
    await reconcileUntil(deps, t.ns, "waiting", "2 ready idle pods", async () => {
      const ps = await pods("waiting");
      return ps.length === 2 && ps.every((p) => phaseOf(p) === "idle" && isReady(p));
    });
    const filled = await t.getPool("waiting");
    expect(filled.metadata?.annotations?.["agentbox.navix.sh/template-version"]).toBe("v3");
    expect(condition(filled, "ReplicaFailure")).toBeUndefined();
    expect((await eventsAbout(core, t.ns, "waiting")).map((e) => e.reason)).toContain("TemplateCopied");
  });

  it("a pod create the apiserver refuses shows in the pool's conditions and as a Warning Event", async () => {
    await core.createNamespacedResourceQuota({
      namespace: t.ns,
      body: { metadata: { name: "two-pods" }, spec: { hard: { pods: "2" } } },
    });
    await until("the quota's status", 20_000, async () => {
      const q = await core.readNamespacedResourceQuota({ name: "two-pods", namespace: t.ns });
      return q.status?.hard?.pods === "2";
    });
    const used = (await core.listNamespacedPod({ namespace: t.ns })).items.length;
    await t.createPool("capped", used + 2);
    await reconcileUntil(deps, t.ns, "capped", "FailedCreate", async () => {
      const pool = await t.getPool("capped");
      return condition(pool, "ReplicaFailure")?.reason === "FailedCreate";
    });
    const message = condition(await t.getPool("capped"), "ReplicaFailure")?.message ?? "";
    expect(message).toMatch(/403 Forbidden: .*exceeded quota: two-pods/);
    const warning = (await eventsAbout(core, t.ns, "capped")).find((e) => e.reason === "FailedCreate");
    expect(warning).toMatchObject({ type: "Warning" });
    expect(warning?.message).toMatch(/exceeded quota/);
    await core.deleteNamespacedResourceQuota({ name: "two-pods", namespace: t.ns });
  });

  it("admits a visibility rule with neither team nor users (it matches everyone, as in agentbox)", async () => {
    const name = `tmpl-open-${suffix}`;
    templates.push(name);
    const body = templateObject(name, "v1", "registry.local/sandbox/python:3.12", {
      visibility: { rules: [{}, { team: "", users: ["alice"] }] },
    });
    const stored = (await custom.createClusterCustomObject({ ...TEMPLATES, body })) as {
      spec: { visibility?: unknown };
    };
    expect(stored.spec.visibility).toEqual({ rules: [{}, { team: "", users: ["alice"] }] });
  });

  it("a template change reaches a pool only when it is refreshed on purpose (HTTP and CLI)", async () => {
    const template = `tmpl-r-${suffix}`;
    await createTemplate(template, "v1", "registry.local/sandbox/python:3.12");
    await namingTemplate("refreshed", template, 0, { idleImage: "registry.local/sandbox/idle:mine" });
    const image = (p: SandboxPool) =>
      (p.spec.template?.spec as { containers: { image: string }[] } | undefined)?.containers[0]?.image;
    const bump = async (version: string, img: string) => {
      const current = (await custom.getClusterCustomObject({ ...TEMPLATES, name: template })) as {
        metadata: { resourceVersion: string };
      };
      const next = templateObject(template, version, img);
      await custom.replaceClusterCustomObject({
        ...TEMPLATES,
        name: template,
        body: { ...next, metadata: { ...next.metadata, resourceVersion: current.metadata.resourceVersion } },
      });
    };

    await bump("v2", "registry.local/sandbox/python:3.13");
    await reconcileUntil(deps, t.ns, "refreshed", "a reconcile", async () => true);
    expect(image(await t.getPool("refreshed"))).toBe("registry.local/sandbox/python:3.12");

    const res = await httpsRequest(
      `https://127.0.0.1:${cluster.hostPort}/functions/refresh-template?namespace=${t.ns}&pool=refreshed`,
      cluster.caCert,
      { method: "POST", headers: { authorization: `Bearer ${cluster.functionsToken}` } },
    );
    expect(res.status).toBe(200);
    const http = await t.getPool("refreshed");
    expect(image(http)).toBe("registry.local/sandbox/python:3.13");
    expect(http.spec.idleImage).toBe("registry.local/sandbox/idle:mine"); // the override stays
    expect(http.metadata?.annotations?.["agentbox.navix.sh/template-version"]).toBe("v2");

    await bump("v3", "registry.local/sandbox/python:3.14");
    const { stdout, code } = await runCli([
      "refresh-template",
      `${t.ns}/refreshed`,
      "--kubeconfig",
      cluster.kubeconfig,
      "--history",
      ":memory:",
    ]);
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /done\s+SandboxPool\/.+\/refreshed\s+refreshed from SandboxTemplate ".+" \(version v3\)/,
    );
    expect(image(await t.getPool("refreshed"))).toBe("registry.local/sandbox/python:3.14");

    // A pool without a template is refused with the reason, not a 500.
    await t.createPool("inline", 0);
    const refused = await httpsRequest(
      `https://127.0.0.1:${cluster.hostPort}/functions/refresh-template?namespace=${t.ns}&pool=inline`,
      cluster.caCert,
      { method: "POST", headers: { authorization: `Bearer ${cluster.functionsToken}` } },
    );
    expect(refused.status).toBe(409);
    expect(JSON.parse(refused.body).error.message).toBe("pool has no spec.templateName to refresh from");
  });
});
