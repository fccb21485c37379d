import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { reconcileTemplate } from "../../functions/runs/reconcile-template.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { TEMPLATES, templateObject } from "./support/envs.ts";
import { kube } from "./support/kube.ts";
import { POOLS, poolTest, reconcileUntil, runUntil } from "./support/steps.ts";

// A SandboxTemplate's Available / Progressing / Degraded (issue #26) against the real apiserver: a
// template whose pods the apiserver refuses is Degraded once a pool created from it is refused its
// pods; fixed, and the pool refreshed from it, it is Progressing, then Available; at rest the
// template step writes nothing.

const { custom } = kube();
const t = poolTest("tmplstatus");
const name = `tmplstatus-${randomBytes(3).toString("hex")}`;
const IMAGE = "registry.local/sandbox/python:3.12";
/** podTemplate is a one-container pod template; imagePullPolicy "Sometimes" passes admission, not Pod validation. */
const podTemplate = (imagePullPolicy: string) => ({
  template: { spec: { containers: [{ name: "sandbox", image: IMAGE, imagePullPolicy }] } },
});

const getTemplate = async () =>
  (await custom.getClusterCustomObject({ ...TEMPLATES, name })) as SandboxTemplate;
/** conditions reads the template's conditions as "type=status/reason". */
const conditions = async () =>
  ((await getTemplate()).status?.conditions ?? []).map((c) => `${c.type}=${c.status}/${c.reason}`);
const condition = async (type: string) =>
  (await getTemplate()).status?.conditions?.find((c) => c.type === type);

afterAll(async () => {
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name }).catch(() => {});
});

describe("a SandboxTemplate's status conditions", () => {
  it("a template whose pods are refused becomes Degraded; fixed and rolled out, it becomes Available", async () => {
    await custom.createClusterCustomObject({
      ...TEMPLATES,
      body: templateObject(name, "v1", IMAGE, podTemplate("Sometimes")),
    });
    // No pool uses it yet: nothing says its pods cannot be rendered.
    await reconcileTemplate(t.deps, name);
    expect(await conditions()).toEqual([
      "Available=True/NoPools",
      "Progressing=False/NoPools",
      "Degraded=False/RendersPods",
    ]);

    // A pool created from it (the defaulting webhook copies the template in) is refused its pod.
    await custom.createNamespacedCustomObject({
      ...POOLS,
      namespace: t.ns,
      body: {
        apiVersion: "agents.navix.sh/v1alpha1",
        kind: "SandboxPool",
        metadata: { name: "web" },
        spec: { replicas: 1, templateName: name },
      },
    });
    await reconcileUntil(t.deps, t.ns, "web", "the pool's refused pod create", async () =>
      (await t.getPool("web")).status?.conditions?.some(
        (c) => c.type === "ReplicaFailure" && c.status === "True" && c.reason === "FailedCreate",
      ),
    );
    await reconcileTemplate(t.deps, name);
    expect(await conditions()).toEqual([
      "Available=False/PodsRefused",
      "Progressing=False/PoolsSettled",
      "Degraded=True/PodsRefused",
    ]);
    expect((await condition("Degraded"))?.message).toMatch(
      new RegExp(
        `^pods rendered from it are refused: ${t.ns}/web: FailedCreate: .*imagePullPolicy.*Unsupported value`,
      ),
    );

    // Fixed: the pool keeps its broken copy until refreshed, which is no longer the template's doing.
    const stored = await getTemplate();
    await custom.replaceClusterCustomObject({
      ...TEMPLATES,
      name,
      body: { ...stored, spec: { ...stored.spec, ...podTemplate("IfNotPresent") } },
    });
    await reconcileTemplate(t.deps, name);
    expect(await conditions()).toEqual([
      "Available=False/NoIdlePodsReady",
      "Progressing=False/PoolsSettled",
      "Degraded=False/RendersPods",
    ]);
    expect((await condition("Degraded"))?.observedGeneration).toBe(
      (await getTemplate()).metadata?.generation,
    );

    // Refreshed: the pool is at the template's revision and waits for its pod.
    const refreshed = await reconcilePool(t.deps, t.ns, "web", "refresh-template");
    expect(refreshed.steps.flatMap((s) => s.outcomes).map((o) => o.result)).toEqual(["done"]);
    await reconcileTemplate(t.deps, name);
    expect(await conditions()).toEqual([
      "Available=False/NoIdlePodsReady",
      "Progressing=True/PoolsRolling",
      "Degraded=False/RendersPods",
    ]);

    // Its pod idle and Ready, as the pool's status counts it: Available, settled.
    await reconcileUntil(t.deps, t.ns, "web", "one ready idle pod counted", async () => {
      const s = (await t.getPool("web")).status;
      return s?.idleReplicas === 1 && (s.unavailableIdleReplicas ?? 0) === 0;
    });
    await runUntil(
      "the template Available",
      () => reconcileTemplate(t.deps, name),
      async () =>
        (await conditions()).join() ===
        "Available=True/IdlePodsReady,Progressing=False/PoolsSettled,Degraded=False/RendersPods",
    );
    expect((await condition("Available"))?.message).toBe(
      `1 of 1 pool(s) have ready idle pods: ${t.ns}/web: 1`,
    );

    // At rest: nothing to write.
    const again = await reconcileTemplate(t.deps, name);
    expect(again).toEqual({ template: name, found: true, outcomes: [] });
  });

  it("a template that does not exist is not found, and nothing is written", async () => {
    expect(await reconcileTemplate(t.deps, `${name}-missing`)).toEqual({
      template: `${name}-missing`,
      found: false,
      outcomes: [],
    });
  });
});
