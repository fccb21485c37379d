import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { tick } from "../../functions/runs/tick.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import { ENVS, envObject, TEMPLATES, templateObject } from "./support/envs.ts";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { kube, until } from "./support/kube.ts";
import { poolTest } from "./support/steps.ts";

// A pool or Env whose template was deleted fails closed: its visibility rules went with the
// template, so only admin keys may claim from it; other tenants get the usual 404 and do not see
// it listed, and the pool's status says why. A pool that never named a template stays open.

const t = poolTest("orphan");
const { custom } = kube();
const { app, deps } = inProcessApi(t.deps);
const template = `orphaned-${randomBytes(3).toString("hex")}`;
const key = { tenant: "", admin: "" };

const get = (path: string, apiKey: string) => app.request(`/v1${path}`, { headers: { "x-api-key": apiKey } });
/** names lists the pools or Envs of this file's namespace that a listing shows (others' run alongside). */
const names = async (res: Response, field: "pools" | "envs") =>
  ((await res.json()) as Record<string, { pool?: string; env?: string }[]>)[field]
    ?.map((x) => x.pool ?? x.env ?? "")
    .filter((name) => name.startsWith(`${t.ns}/`));
const choices = async (res: Response) =>
  ((await res.json()) as { error: { choices: string[] } }).error.choices;

beforeAll(async () => {
  key.tenant = await tenantKey(deps, "orphan-team");
  key.admin = await createApiKey(deps, { team: "ops", user: "root", admin: true });
  await custom.createClusterCustomObject({ ...TEMPLATES, body: templateObject(template, "v1", "python:3") });
  await t.readyPool("orphan", 2, { templateName: template });
  await t.createPool("orphan-b", 0, { templateName: template });
  await t.createPool("plain", 0);
  await custom.createNamespacedCustomObject({
    ...ENVS,
    namespace: t.ns,
    body: envObject(t.ns, "orphan-env", template, [{ name: "orphan-env-a", spec: { replicas: 0 } }]),
  });
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template });
  // The API reads templates from the watch cache first: wait until it knows the template is gone.
  await until("the watch cache to miss the template", 10_000, async () =>
    (await orMissing(deps.kube.getTemplate(template, { cached: true }))) === undefined ? true : undefined,
  );
});
afterAll(async () => {
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
});

describe("a pool or Env whose template was deleted", () => {
  it("answers a tenant's create with the usual 404, without listing it among the choices", async () => {
    const pool = await postCreate(app, key.tenant, { pool: `${t.ns}/orphan` });
    expect(pool.status).toBe(404);
    const poolChoices = await choices(pool);
    expect(poolChoices).not.toContain(`${t.ns}/orphan`);
    expect(poolChoices).toContain(`${t.ns}/plain`); // names no template: open to all
    const env = await postCreate(app, key.tenant, { env: `${t.ns}/orphan-env` });
    expect(env.status).toBe(404);
    expect(await choices(env)).not.toContain(`${t.ns}/orphan-env`);
  });

  it("is not listed for a tenant, and is for an admin", async () => {
    expect(await names(await get("/pools", key.tenant), "pools")).toEqual([`${t.ns}/plain`]);
    expect(await names(await get("/pools", key.admin), "pools")).toEqual(
      expect.arrayContaining([`${t.ns}/orphan`, `${t.ns}/plain`]),
    );
    expect(await names(await get("/envs", key.tenant), "envs")).not.toContain(`${t.ns}/orphan-env`);
    expect(await names(await get("/envs", key.admin), "envs")).toContain(`${t.ns}/orphan-env`);
  });

  it("still serves an admin", async () => {
    expect((await postCreate(app, key.admin, { pool: `${t.ns}/orphan` })).status).toBe(201);
  });

  it("says so in the pool's status, on a run of the pool and on a tick", async () => {
    const condition = async (pool: string) =>
      (await t.getPool(pool)).status?.conditions?.find((c) => c.type === "TemplateAvailable");
    const deleted = {
      status: "False",
      reason: "TemplateDeleted",
      message: `SandboxTemplate "${template}" was deleted; only admin API keys may claim from this pool`,
    };
    await reconcilePool(t.deps, t.ns, "orphan");
    expect(await condition("orphan")).toMatchObject(deleted);
    await tick(t.deps, { namespace: t.ns, periodMs: 0, jitter: 0, concurrency: 2 });
    expect(await condition("orphan-b")).toMatchObject(deleted);
    expect(await condition("plain")).toBeUndefined();
  });
});
