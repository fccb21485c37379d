import { randomBytes } from "node:crypto";
import { afterAll, beforeAll } from "vitest";
import { createApiKey } from "../../../functions/api/create-api-key.ts";
import { SANDBOX_POOL_LABEL } from "../../../lib/crd/keys.ts";
import { kube, newNamespace, until } from "./kube.ts";
import { isReady, POOLS, phaseOf, poolObject, testDeps } from "./steps.ts";

/** API_KEYS is where the test host keeps its hashed API keys. */
export const API_KEYS = { namespace: "agentbox-system", name: "agentbox-api-keys" };

/**
 * tenantPool sets up what the tests of the host's surfaces (metrics, console, CLI) start from: an
 * `audit-<prefix>` namespace (the test host reconciles it on audit events) with a pool "p" of
 * `replicas` (and `spec`, e.g. a templateName), and an API key of team `team` (a fresh user).
 * `keyOf` mints more keys of the team. Available once the file's tests run; the namespace goes
 * after them.
 */
export function tenantPool(prefix: string, team: string, replicas = 1, spec: Record<string, unknown> = {}) {
  const { core, custom } = kube();
  const deps = testDeps();
  let cleanup = async () => {};
  const keyOf = (user: string) =>
    createApiKey({ kube: deps.kube, apiKeys: API_KEYS, now: () => new Date() }, { team, user });
  const pods = async () =>
    (await core.listNamespacedPod({ namespace: t.ns, labelSelector: `${SANDBOX_POOL_LABEL}=p` })).items;
  /** allIdle waits until every one of the pool's `replicas` pods is idle and Ready. */
  const allIdle = () =>
    until(`${replicas} idle pods`, 90_000, async () => {
      const ps = await pods();
      return ps.length === replicas && ps.every((p) => phaseOf(p) === "idle" && isReady(p)) ? ps : undefined;
    });
  const t = { ns: "", key: "", deps, keyOf, pods, allIdle };
  beforeAll(async () => {
    const created = await newNamespace(core, `audit-${prefix}`);
    t.ns = created.ns;
    cleanup = created.cleanup;
    await core.createNamespace({ body: { metadata: { name: API_KEYS.namespace } } }).catch(() => {});
    t.key = await keyOf(`u-${randomBytes(3).toString("hex")}`);
    await custom.createNamespacedCustomObject({
      ...POOLS,
      namespace: t.ns,
      body: poolObject(t.ns, "p", replicas, spec),
    });
  });
  afterAll(async () => {
    await cleanup();
    deps.history.close();
  });
  return t;
}
