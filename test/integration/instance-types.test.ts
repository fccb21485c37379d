import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { DEFAULT_INSTANCE_TYPES } from "../../lib/env/instance-types.ts";
import { ENVS, envObject, TEMPLATES, templateObject } from "./support/envs.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, newNamespace, until } from "./support/kube.ts";
import { isReady, live, POOLS, phaseOf, testDeps } from "./support/steps.ts";
import { API_KEYS } from "./support/tenant-pool.ts";

// The instance type catalog against the real cluster: the test host's validating webhook checks
// the types an Env names against the ConfigMap agentbox-system/agentbox-instance-types (the
// default), its audit-driven Env runs size the members from it, and its API routes a create that
// asks for a shape to the member of that shape, or answers 404 with the shapes there are. The
// catalog also lists "small", the sample Env's type, so other files' samples stay valid meanwhile.

const { core, custom, cluster } = kube();
const deps = testDeps();
const base = `https://127.0.0.1:${cluster.hostPort}/v1`;
const template = `shapes-${randomBytes(3).toString("hex")}`;
const CATALOG = {
  small: { cpu: "250m", memory: "256Mi", multiplier: { min: 1, max: 20 } },
  large: { cpu: "1", memory: "1Gi", multiplier: { min: 1, max: 4 } },
};
let ns: string;
let key: string;
let cleanup: () => Promise<void> = async () => {};

const json = (res: { body: unknown }) => JSON.parse(String(res.body)) as Record<string, unknown>;
const create = async (body: Record<string, unknown>) => {
  const res = await httpsRequest(`${base}/sandboxes`, cluster.caCert, {
    timeoutMs: 60_000,
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: json(res) };
};
const member = (name: string, config: Record<string, unknown>) => ({ name, spec: { replicas: 1 }, config });
const envBody = (name: string, members: Record<string, unknown>[]) => envObject(ns, name, template, members);
/** rejection is the apiserver's answer to an Env create the webhook must refuse. */
async function rejection(body: Record<string, unknown>): Promise<string> {
  try {
    await custom.createNamespacedCustomObject({ ...ENVS, namespace: ns, body });
  } catch (e) {
    return (JSON.parse((e as { body?: string }).body ?? "{}") as { message?: string }).message ?? String(e);
  }
  throw new Error("expected the Env to be refused, but it was created");
}
const getPool = async (name: string) =>
  (await custom.getNamespacedCustomObject({ ...POOLS, namespace: ns, name })) as SandboxPool;
const idleCounted = (pool: string) =>
  until(`${pool} Ready with 1 idle pod, counted in its status`, 60_000, async () => {
    const pods = live(
      (
        await core.listNamespacedPod({
          namespace: ns,
          labelSelector: `agentbox.navix.sh/sandbox-pool=${pool}`,
        })
      ).items,
    );
    const s = (await getPool(pool)).status;
    return (
      pods.filter((p) => phaseOf(p) === "idle" && isReady(p)).length === 1 &&
      s?.idleReplicas === 1 &&
      (s.unavailableIdleReplicas ?? 0) === 0
    );
  });

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "audit"));
  await core.createNamespace({ body: { metadata: { name: API_KEYS.namespace } } }).catch(() => {});
  key = await createApiKey(
    { kube: deps.kube, apiKeys: API_KEYS, now: () => new Date() },
    { team: "research", user: "shapes" },
  );
  await custom.createClusterCustomObject({
    ...TEMPLATES,
    body: templateObject(template, "v1", "registry.local/sandbox/python:3.12"),
  });
  await core.createNamespacedConfigMap({
    namespace: DEFAULT_INSTANCE_TYPES.namespace,
    body: {
      metadata: { name: DEFAULT_INSTANCE_TYPES.name },
      data: Object.fromEntries(Object.entries(CATALOG).map(([k, e]) => [k, JSON.stringify(e)])),
    },
  });
});
afterAll(async () => {
  await core
    .deleteNamespacedConfigMap({ ...DEFAULT_INSTANCE_TYPES, namespace: DEFAULT_INSTANCE_TYPES.namespace })
    .catch(() => {});
  await cleanup();
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
  deps.history.close();
});

describe("the instance type catalog", () => {
  it("refuses an Env naming a type it lacks, a multiplier out of range, or a group mixing shapes", async () => {
    const unknown = await rejection(
      envBody("bad-type", [member("bt", { instanceType: "huge", multiplier: 1 })]),
    );
    expect(unknown).toContain(
      'spec.clusters[0].members[0].config.instanceType: instance type "huge" is not in the instance type catalog (ConfigMap agentbox-system/agentbox-instance-types); it has: large, small',
    );
    const range = await rejection(
      envObject(ns, "bad-range", template, [member("br", { instanceType: "large", multiplier: 1 })], {
        defaults: { instanceType: "large", multiplier: 5 },
      }),
    );
    expect(range).toContain(
      'spec.defaults.multiplier: multiplier 5 is outside [1, 4], the range instance type "large" declares',
    );
    const mixed = await rejection(
      envBody("bad-mix", [
        member("mx-a", { instanceType: "small", multiplier: 1 }),
        member("mx-b", { instanceType: "large", multiplier: 1 }),
      ]),
    );
    expect(mixed).toContain(
      'scaling group "default" mixes instance shapes: member "mx-b" has instanceType large x1, member "mx-a"',
    );
  });

  it("sizes each member as InstanceType × Multiplier and routes a create to the member of the shape it asks for", async () => {
    await custom.createNamespacedCustomObject({
      ...ENVS,
      namespace: ns,
      body: envBody("shapes", [
        member("shape-small", { instanceType: "small", multiplier: 1, scalingGroup: "small" }),
        member("shape-large", { instanceType: "large", multiplier: 2, scalingGroup: "large" }),
      ]),
    });
    await idleCounted("shape-small");
    await idleCounted("shape-large");
    // The first container gets the type's resources × multiplier, as requests and limits.
    const large = { cpu: "2", memory: "2Gi" };
    const pool = await getPool("shape-large");
    const podSpec = pool.spec.template?.spec as { containers?: { resources?: unknown }[] } | undefined;
    expect(podSpec?.containers?.[0]?.resources).toEqual({ requests: large, limits: large });
    const status = await until(
      "the Env's status reporting both members' effective resources",
      30_000,
      async () => {
        const e = (await custom.getNamespacedCustomObject({
          ...ENVS,
          namespace: ns,
          name: "shapes",
        })) as SandboxEnv;
        const members = e.status?.clusters?.find((c) => c.clusterID === "local")?.observedMembers ?? [];
        return members.length === 2 ? members : undefined;
      },
    );
    expect(status).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: "shape-large",
          instanceType: "large",
          multiplier: 2,
          effectiveResources: { requests: large, limits: large },
        }),
        expect.objectContaining({
          name: "shape-small",
          effectiveResources: {
            requests: { cpu: "250m", memory: "256Mi" },
            limits: { cpu: "250m", memory: "256Mi" },
          },
        }),
      ]),
    );

    const small = await create({ env: `${ns}/shapes`, instanceType: "small" });
    expect(small.status).toBe(201);
    expect(small.body.pool).toBe("shape-small");
    const big = await create({ env: `${ns}/shapes`, instanceType: "large", multiplier: 2 });
    expect(big.status).toBe(201);
    expect(big.body.pool).toBe("shape-large");

    const none = await create({ env: `${ns}/shapes`, instanceType: "gpu-a100" });
    expect(none.status).toBe(404);
    expect(none.body.error).toEqual({
      code: "NotFound",
      message: `no member of env ${ns}/shapes here has instance type gpu-a100; shapes you may use: large x2, small x1`,
      choices: ["large x2", "small x1"],
    });
    const wrongMultiplier = await create({ env: `${ns}/shapes`, instanceType: "large", multiplier: 1 });
    expect(wrongMultiplier.status).toBe(404);
    expect((wrongMultiplier.body.error as { choices: string[] }).choices).toEqual(["large x2", "small x1"]);
  });
});
