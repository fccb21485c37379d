import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { parseExposition, sampleOf } from "../../lib/metrics/parse-exposition.ts";
import { TEMPLATES } from "./support/envs.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { POOLS, poolObject, testDeps } from "./support/steps.ts";
import { API_KEYS } from "./support/tenant-pool.ts";

// What a key's team may create sandboxes from, through E2B's template endpoints (the official SDK's
// Template.exists, getTags and build, and plain requests) and the native GET /v1/templates: two
// templates, each visible to one team, and a pool made from each. Templates are cluster-wide and
// other test files make theirs at the same time, so the lists are checked for ours and for no
// template the team may not see, never for an exact length.

const { core, custom, cluster } = kube();
const deps = testDeps();
const suffix = randomBytes(3).toString("hex");
const team = "research";
const rivals = `rivals-${suffix}`;
const mine = `tpl-mine-${suffix}`;
const theirs = `tpl-theirs-${suffix}`;
const base = `https://127.0.0.1:${cluster.hostPort}`;
let ns = "";
let aliceKey = "";
let rivalKey = "";
const cleanups: (() => Promise<void>)[] = [];

// The main container asks for a quarter CPU and 512 MiB and may use 2 CPUs and 1.5 GiB: the
// E2B answer shows the limits (what its sandboxes report), the native one both as written.
const resources = { requests: { cpu: "250m", memory: "512Mi" }, limits: { cpu: "2", memory: "1536Mi" } };
const podTemplate = {
  spec: {
    containers: [
      { name: "sandbox", image: "registry.local/sandbox/base:1", resources },
      { name: "sidecar", image: "registry.local/sandbox/side:1", resources: { limits: { cpu: "4" } } },
    ],
  },
};

function templateFor(name: string, visibleTo: string) {
  return {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxTemplate",
    metadata: { name },
    spec: { template: podTemplate, visibility: { rules: [{ team: visibleTo }] } },
  };
}

const call = (method: string, path: string, key: string, body?: unknown) =>
  httpsRequest(`${base}${path}`, cluster.caCert, {
    timeoutMs: 60_000,
    method,
    headers: { "x-api-key": key, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
const json = <T>(res: { body: string }) => JSON.parse(res.body) as T;

interface E2bTemplateAnswer {
  templateID: string;
  cpuCount: number;
  memoryMB: number;
  public: boolean;
  aliases: string[];
  buildStatus: string;
  builds?: { cpuCount: number; memoryMB: number; status: string }[];
}

/** visibleTeams are the teams a template's rules name ("" for a rule that names none). */
async function visibleTeams(name: string): Promise<string[] | undefined> {
  const t = (await custom.getClusterCustomObject({ ...TEMPLATES, name }).catch(() => undefined)) as
    | { spec: { visibility?: { rules?: { team?: string }[] } } }
    | undefined;
  return t && (t.spec.visibility?.rules ?? [{}]).map((r) => r.team ?? "");
}

beforeAll(async () => {
  const created = await newNamespace(core, "e2btpl");
  ns = created.ns;
  cleanups.push(created.cleanup);
  await core.createNamespace({ body: { metadata: { name: API_KEYS.namespace } } }).catch(() => {});
  const keyOf = (t: string) =>
    createApiKey(
      { kube: deps.kube, apiKeys: API_KEYS, now: () => new Date() },
      { team: t, user: `u-${suffix}` },
    );
  aliceKey = await keyOf(team);
  rivalKey = await keyOf(rivals);
  for (const [name, to] of [
    [mine, team],
    [theirs, rivals],
  ] as const) {
    await custom.createClusterCustomObject({ ...TEMPLATES, body: templateFor(name, to) });
    cleanups.push(() => custom.deleteClusterCustomObject({ ...TEMPLATES, name }).then(() => {}));
  }
  // Pools of no replicas: a create resolves a template to them, no pod is needed to list them.
  for (const [pool, templateName] of [
    ["mine", mine],
    ["theirs", theirs],
  ] as const)
    await custom.createNamespacedCustomObject({
      ...POOLS,
      namespace: ns,
      body: poolObject(ns, pool, 0, { templateName, template: podTemplate }),
    });
  await until("the team's template listed", 30_000, async () => {
    const res = await call("GET", "/e2b/templates", aliceKey);
    return res.status === 200 && res.body.includes(`"${mine}"`) && res.body.includes(`"${ns}/mine"`);
  });
});
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
  deps.history.close();
});

describe("E2B templates", () => {
  it("answers the official SDK: exists for the team's template and pool only, no tags, builds refused", async () => {
    const missing = `tpl-missing-${suffix}`;
    const stdout = await runSdkScript("e2b-sdk-templates.ts", {
      E2B_API_KEY: aliceKey,
      E2B_TEST_NAMES: [mine, theirs, missing, `${ns}/mine`, `${ns}/theirs`].join(","),
    });
    const out = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
    expect(out.error).toBeUndefined();
    expect(out.exists).toEqual({
      [mine]: true,
      [theirs]: false,
      [missing]: false,
      [`${ns}/mine`]: true,
      [`${ns}/theirs`]: false,
    });
    expect(out.tags).toEqual([]);
    expect(out.build).toMatch(
      /^BuildError: .*building templates is not supported by this control plane: templates are SandboxTemplate resources \(agents\.navix\.sh\/v1alpha1\) applied with kubectl, e\.g\. infra\/samples\/10-sandbox-template\.yaml/,
    );
  }, 120_000);

  it("lists exactly what the key's team may use, with CPU and memory from the main container's limits", async () => {
    const listed = json<E2bTemplateAnswer[]>(await call("GET", "/e2b/templates", aliceKey));
    const ids = listed.map((t) => t.templateID);
    expect(ids).toContain(mine);
    expect(ids).toContain(`${ns}/mine`);
    expect(ids).not.toContain(theirs);
    expect(ids).not.toContain(`${ns}/theirs`);
    expect(listed.find((t) => t.templateID === mine)).toMatchObject({
      cpuCount: 2,
      memoryMB: 1536,
      public: false,
      aliases: [mine],
      buildStatus: "ready",
    });
    expect(listed.find((t) => t.templateID === `${ns}/mine`)).toMatchObject({ cpuCount: 2, memoryMB: 1536 });
    // No template listed is one the team may not see (one deleted since by another file is skipped).
    for (const id of ids.filter((i) => !i.includes("/"))) {
      const teams = await visibleTeams(id);
      if (teams)
        expect(
          teams.some((t) => t === "" || t === team),
          id,
        ).toBe(true);
    }
    // The other team sees its own and not ours.
    const rival = json<E2bTemplateAnswer[]>(await call("GET", "/e2b/templates", rivalKey)).map(
      (t) => t.templateID,
    );
    expect(rival).toContain(theirs);
    expect(rival).toContain(`${ns}/theirs`);
    expect(rival).not.toContain(mine);
    expect(rival).not.toContain(`${ns}/mine`);
  });

  it("gets one template with its build, and answers another team's like a missing one", async () => {
    const got = await call("GET", `/e2b/templates/${mine}`, aliceKey);
    expect(got.status).toBe(200);
    expect(json<E2bTemplateAnswer>(got)).toMatchObject({
      templateID: mine,
      cpuCount: 2,
      memoryMB: 1536,
      builds: [{ cpuCount: 2, memoryMB: 1536, status: "ready" }],
    });
    const pool = await call("GET", `/e2b/templates/${encodeURIComponent(`${ns}/mine`)}`, aliceKey);
    expect(json<E2bTemplateAnswer>(pool)).toMatchObject({ templateID: `${ns}/mine` });
    for (const path of [`/e2b/templates/${theirs}`, `/e2b/templates/tpl-missing-${suffix}`]) {
      const res = await call("GET", path, aliceKey);
      expect(res.status, path).toBe(404);
      expect(json<{ code: number; message: string }>(res)).toEqual({
        code: 404,
        message: `template "${path.split("/").at(-1)}" not found`,
      });
    }
    expect((await call("GET", `/e2b/templates/${mine}`, rivalKey)).status).toBe(404);
  });

  it("refuses template builds with 501 and counts them by operation", async () => {
    const scrape = async () => {
      const res = await httpsRequest(`${base}/metrics`, cluster.caCert, {
        timeoutMs: 30_000,
        headers: { authorization: `Bearer ${cluster.metricsToken}` },
      });
      expect(res.status).toBe(200);
      return (
        sampleOf(parseExposition(res.body), "agentbox_e2b_unsupported_total", {
          operation: "template-build",
        }) ?? 0
      );
    };
    const before = await scrape();
    for (const path of [
      "/e2b/v3/templates",
      "/e2b/v2/templates",
      "/e2b/templates",
      `/e2b/templates/${mine}`,
    ]) {
      const res = await call("POST", path, aliceKey, { name: "x" });
      expect(res.status, path).toBe(501);
      expect(json<{ code: number; message: string }>(res)).toMatchObject({
        code: 501,
        message: expect.stringContaining("SandboxTemplate resources (agents.navix.sh/v1alpha1)"),
      });
    }
    expect((await call("DELETE", `/e2b/templates/${mine}`, aliceKey)).status).toBe(501);
    expect((await call("GET", `/e2b/templates/${mine}/builds/b1/status`, aliceKey)).status).toBe(501);
    // Both of the host's threads report into one exposition; other files' builds only add.
    await until("4 template builds counted", 30_000, async () => (await scrape()) - before >= 4);
  });
});

describe("GET /v1/templates", () => {
  interface Summary {
    name: string;
    pools: string[];
    ready: boolean;
    resources?: unknown;
  }
  it("lists the team's templates with their resources and the pools that serve them", async () => {
    const res = await call("GET", "/v1/templates", aliceKey);
    expect(res.status).toBe(200);
    const { templates } = json<{ templates: Summary[] }>(res);
    expect(templates.find((t) => t.name === mine)).toEqual({
      name: mine,
      aliases: [mine],
      public: false,
      resources,
      pools: [`${ns}/mine`],
      envs: [],
      ready: true,
      degraded: false,
      createdAt: expect.any(String),
    });
    expect(templates.map((t) => t.name)).not.toContain(theirs);
    const rival = json<{ templates: Summary[] }>(await call("GET", "/v1/templates", rivalKey)).templates;
    expect(rival.map((t) => t.name)).toContain(theirs);
    expect(rival.map((t) => t.name)).not.toContain(mine);
  });
});
