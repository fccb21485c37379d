import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSandbox } from "../../functions/api/create-sandbox.ts";
import { reconcileEnv } from "../../functions/runs/reconcile-env.ts";
import { SCALE_DOWN_PROTECTED_ANNOTATION } from "../../lib/crd/keys.ts";
import { mapOps } from "../../lib/kube/json-patch.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import { ENVS, envObject, TEMPLATES, templateObject } from "./support/envs.ts";
import { inProcessApi } from "./support/in-process-api.ts";
import { kube } from "./support/kube.ts";
import { isReady, phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// The claim side honours the protection window of the pool's scale-down policy as the pool side
// does (issue #26; seed 002, PoolScaleDownPolicy.protectionWindowSeconds): a member pool whose
// Env group says 60 s keeps a pod marked 30 s ago claimable, whether the create names the pool or
// the Env; a standalone pool keeps the CRD's 10 s. Creates run in-process on the real apiserver.

const t = poolTest("claimwindow");
const { custom } = kube();
const { deps } = inProcessApi(t.deps);
const template = `claimwindow-${randomBytes(3).toString("hex")}`;
const tenant = { team: "research", user: "alice" };

/** markAll marks every pod of a pool for scale-down, `seconds` ago, as the pool step would. */
async function markAll(pool: string, seconds: number): Promise<void> {
  const at = rfc3339(new Date(Date.now() - seconds * 1000));
  for (const pod of await t.pods(pool))
    await t.deps.kube.patchPod(
      t.ns,
      pod.metadata?.name ?? "",
      mapOps("/metadata/annotations", pod.metadata?.annotations, { [SCALE_DOWN_PROTECTED_ANNOTATION]: at }),
    );
}

const idleReady = (pool: string, n: number) => async () => {
  const pods = await t.pods(pool);
  return pods.length === n && pods.every((p) => phaseOf(p) === "idle" && isReady(p));
};

beforeAll(async () => {
  await custom.createClusterCustomObject({ ...TEMPLATES, body: templateObject(template, "v1", "python:3") });
  await custom.createNamespacedCustomObject({
    ...ENVS,
    namespace: t.ns,
    body: envObject(
      t.ns,
      "windowed",
      template,
      [{ name: "member", spec: { replicas: 2 }, config: { scalingGroup: "g" } }],
      {
        // Disabled: the test sets replicas, not the autoscaler; the policy applies all the same.
        autoscaling: {
          groups: [{ name: "g", enabled: false, scaleDownPolicy: { protectionWindowSeconds: 60 } }],
        },
      },
    ),
  });
  await reconcileEnv(t.deps, t.ns, "windowed");
  await reconcileUntil(t.deps, t.ns, "member", "2 idle pods in member", idleReady("member", 2));
  await t.readyPool("alone", 1);
  // No pool step runs after this: it would take the marks off (neither pool has too many pods).
  await markAll("member", 30);
  await markAll("alone", 30);
});
afterAll(async () => {
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
});

describe("claiming a pod marked for scale-down", () => {
  it("a standalone pool: 30 s after its mark the CRD's 10 s window is over, so no create takes it", async () => {
    const outcome = await createSandbox(deps, tenant, { pool: `${t.ns}/alone` });
    expect(outcome).toMatchObject({ ok: false, reason: "exhausted", tried: 0 });
  });

  it("a member of a group whose policy says 60 s: a create naming the pool claims it", async () => {
    const outcome = await createSandbox(deps, tenant, { pool: `${t.ns}/member` });
    expect(outcome.ok).toBe(true);
    if (outcome.ok) expect(outcome.pool.metadata?.name).toBe("member");
  });

  it("and so does a create naming the Env", async () => {
    const outcome = await createSandbox(deps, tenant, { env: `${t.ns}/windowed` });
    expect(outcome.ok).toBe(true);
    if (outcome.ok) expect(outcome.pool.metadata?.name).toBe("member");
  });
});
