import { randomBytes } from "node:crypto";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import { CATALOG_READ_SHARE_MS, type HostDeps } from "../../functions/host-deps.ts";
import { reconcileEnv } from "../../functions/runs/reconcile-env.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { tick } from "../../functions/runs/tick.ts";
import { readCluster } from "../../functions/steps/snapshot.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { SharedRead } from "../../lib/util/shared-read.ts";
import {
  ENVS,
  envObject,
  eventsAbout,
  printerColumns,
  TEMPLATES,
  templateObject,
  tickUntil,
} from "./support/envs.ts";
import { kube } from "./support/kube.ts";
import { type Obj, Samples } from "./support/samples.ts";
import { isReady, POOLS, phaseOf, poolTest } from "./support/steps.ts";

// SandboxEnvs on the real control plane: the Env step materialises, keeps and removes its member
// pools and reports them; the pool steps run the pods. Both are driven through the real tick
// (one namespace), or called directly where a test needs one run.

const { core, custom } = kube();
const t = poolTest("env");
const { deps, pods } = t;
const template = `env-tmpl-${randomBytes(3).toString("hex")}`;
const TEMPLATE_IMAGE = "registry.local/sandbox/python:3.12";

beforeAll(async () => {
  await custom.createClusterCustomObject({
    ...TEMPLATES,
    body: templateObject(template, "v1", TEMPLATE_IMAGE),
  });
});
afterAll(async () => {
  await custom.deleteClusterCustomObject({ ...TEMPLATES, name: template }).catch(() => {});
});

const getEnv = async (name: string) =>
  (await custom.getNamespacedCustomObject({ ...ENVS, namespace: t.ns, name })) as SandboxEnv;
const createEnv = (name: string, members: Record<string, unknown>[], extra: Record<string, unknown> = {}) =>
  custom.createNamespacedCustomObject({
    ...ENVS,
    namespace: t.ns,
    body: envObject(t.ns, name, template, members, extra),
  });
const patchEnv = (name: string, ops: unknown[]) =>
  custom.patchNamespacedCustomObject({ ...ENVS, namespace: t.ns, name, body: ops });
const findPool = async (name: string) =>
  (await custom.listNamespacedCustomObject({ ...POOLS, namespace: t.ns })).items.find(
    (p: SandboxPool) => p.metadata?.name === name,
  ) as SandboxPool | undefined;
const readyIdle = (ps: V1Pod[], n: number) =>
  ps.length === n && ps.every((p) => phaseOf(p) === "idle" && isReady(p));
const member = (name: string, replicas: number, extra: Record<string, unknown> = {}) => ({
  name,
  spec: { replicas },
  config: { scalingGroup: "default", labels: { team: "ml" } },
  ...extra,
});

describe("SandboxEnv", () => {
  it("materialises its members into pools that reach Ready, follows member replicas, and shows its columns", async () => {
    await createEnv("web", [member("web-a", 2), member("web-b", 1)], {
      overrides: { defaultIdleTimeout: "15m" },
    });
    await tickUntil(deps, t.ns, "both members Ready with their pods", async () => {
      const env = await getEnv("web");
      return (
        readyIdle(await pods("web-a"), 2) &&
        readyIdle(await pods("web-b"), 1) &&
        env.status?.conditions?.find((c) => c.type === "Ready")?.status === "True" &&
        env.status.idleReplicas === 3
      );
    });
    const a = (await findPool("web-a")) as SandboxPool;
    expect(a.metadata?.labels).toMatchObject({
      "agentbox.navix.sh/env": "web",
      "agentbox.navix.sh/scaling-group": "default",
      team: "ml",
      "sample.agentbox.dev/tier": "gold",
    });
    expect(a.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: "SandboxEnv",
      name: "web",
      controller: true,
    });
    expect(a.spec).toMatchObject({ templateName: template, defaultIdleTimeout: "15m", replicas: 2 });
    const env = await getEnv("web");
    expect(env.status?.clusters?.[0]).toMatchObject({ clusterID: "local", isLocal: true });
    expect(
      env.status?.clusters?.[0]?.observedMembers?.map((m) => [
        m.name,
        m.state,
        m.idleCount,
        m.desiredReplicas,
      ]),
    ).toEqual([
      ["web-a", "Active", 2, 2],
      ["web-b", "Active", 1, 1],
    ]);
    expect(await printerColumns(`/apis/agents.navix.sh/v1alpha1/namespaces/${t.ns}/sandboxenvs/web`)).toEqual(
      [expect.objectContaining({ Name: "web", Members: 1 + 1, Desired: 3, Running: 0, Idle: 3 })],
    );

    await patchEnv("web", [{ op: "replace", path: "/spec/clusters/0/members/0/spec/replicas", value: 4 }]);
    await tickUntil(deps, t.ns, "web-a at 4 pods", async () => readyIdle(await pods("web-a"), 4));
    expect(((await findPool("web-a")) as SandboxPool).spec.replicas).toBe(4);
    const columns = await tickUntil(deps, t.ns, "the Env's columns", async () => {
      const [row] = await printerColumns(`/apis/agents.navix.sh/v1alpha1/namespaces/${t.ns}/sandboxenvs/web`);
      return row?.Idle === 5 ? row : undefined;
    });
    expect(columns).toMatchObject({ Desired: 5, Idle: 5 });
  });

  it("the sample Env (infra/samples) yields its member pool, Ready with its minReplicas", async () => {
    const samples = new Samples(custom, t.ns);
    const { SandboxTemplate: sampleTemplate, SandboxEnv: sampleEnv } = samples.byKind();
    try {
      await samples.create(sampleTemplate as Obj);
      await samples.create(sampleEnv as Obj);
      await tickUntil(deps, t.ns, "python-small Ready", async () => readyIdle(await pods("python-small"), 1));
      const env = await tickUntil(deps, t.ns, "the sample Env Ready", async () => {
        const e = await getEnv("python");
        return e.status?.conditions?.find((c) => c.type === "Ready")?.status === "True" ? e : undefined;
      });
      expect(env.status).toMatchObject({
        memberCount: 1,
        desiredReplicas: 1,
        idleReplicas: 1,
        runningReplicas: 0,
      });
      expect(((await findPool("python-small")) as SandboxPool).spec.defaultIdleTimeout).toBe("15m");
    } finally {
      await samples.cleanup();
    }
  });

  it("reverts drift on a member pool (kubectl scale included), while a standalone pool's scale is honoured", async () => {
    await createEnv("drift", [member("drift-a", 1)]);
    await tickUntil(deps, t.ns, "drift-a Ready", async () => readyIdle(await pods("drift-a"), 1));
    // As `kubectl scale sbp drift-a --replicas=3` does: through the scale subresource.
    await custom.patchNamespacedCustomObjectScale({
      ...POOLS,
      namespace: t.ns,
      name: "drift-a",
      body: [{ op: "replace", path: "/spec/replicas", value: 3 }],
    });
    await custom.patchNamespacedCustomObject({
      ...POOLS,
      namespace: t.ns,
      name: "drift-a",
      body: [
        { op: "replace", path: "/spec/idleImage", value: "registry.local/sandbox/idle:hand-edited" },
        { op: "replace", path: "/metadata/labels/team", value: "someone-else" },
      ],
    });
    await reconcileEnv(deps, t.ns, "drift");
    const back = (await findPool("drift-a")) as SandboxPool;
    expect(back.spec.replicas).toBe(1);
    expect(back.spec.idleImage).toBe("registry.local/sandbox/idle:1");
    expect(back.metadata?.labels?.team).toBe("ml");
    const reverted = (await eventsAbout(core, t.ns, "drift-a")).find((e) => e.reason === "ReplicasReverted");
    expect(reverted?.type).toBe("Warning");
    expect(reverted?.message).toMatch(
      /spec.replicas 3 reverted to 1: SandboxEnv "drift" owns this pool's replicas/,
    );

    await t.createPool("standalone", 1);
    await tickUntil(deps, t.ns, "standalone Ready", async () => readyIdle(await pods("standalone"), 1));
    await custom.patchNamespacedCustomObjectScale({
      ...POOLS,
      namespace: t.ns,
      name: "standalone",
      body: [{ op: "replace", path: "/spec/replicas", value: 2 }],
    });
    await tickUntil(deps, t.ns, "standalone at 2", async () => readyIdle(await pods("standalone"), 2));
    expect(((await findPool("standalone")) as SandboxPool).spec.replicas).toBe(2);
  });

  it("keeps every history record when a member is removed and when the Env is deleted", async () => {
    await createEnv("keep", [member("keep-a", 1), member("keep-b", 1)]);
    await tickUntil(deps, t.ns, "both members Ready", async () => {
      return readyIdle(await pods("keep-a"), 1) && readyIdle(await pods("keep-b"), 1);
    });
    for (const [pool, id] of [
      ["keep-a", "sbx-keep-a"],
      ["keep-b", "sbx-keep-b"],
    ] as const) {
      const [pod] = await pods(pool);
      const claimed = await claimSandbox(deps, pod as V1Pod, {
        sandboxId: id,
        containerImages: { sandbox: "registry.local/sandbox/agent:1" },
      });
      expect(claimed.ok).toBe(true);
    }
    await tickUntil(deps, t.ns, "both sandboxes running", async () => {
      const all = [...(await pods("keep-a")), ...(await pods("keep-b"))];
      return all.filter((p) => phaseOf(p) === "running").length === 2;
    });

    await patchEnv("keep", [{ op: "remove", path: "/spec/clusters/0/members/1" }]);
    await tickUntil(deps, t.ns, "keep-b gone", async () => (await findPool("keep-b")) === undefined);
    expect(await deps.history.get("sbx-keep-b")).toMatchObject({
      sandboxId: "sbx-keep-b",
      poolName: "keep-b",
    });

    await custom.deleteNamespacedCustomObject({ ...ENVS, namespace: t.ns, name: "keep" });
    // Garbage collection deletes the member pools the Env owned; the pool steps record and let go.
    await tickUntil(deps, t.ns, "keep-a gone", async () => (await findPool("keep-a")) === undefined, 60_000);
    expect(await deps.history.get("sbx-keep-a")).toMatchObject({
      sandboxId: "sbx-keep-a",
      poolName: "keep-a",
    });
  });

  it("a tick's stale Env snapshot never deletes a member that is back in the Env", async () => {
    await createEnv("stale", [member("stale-a", 1)]);
    await tickUntil(deps, t.ns, "stale-a Ready", async () => readyIdle(await pods("stale-a"), 1));
    await patchEnv("stale", [{ op: "remove", path: "/spec/clusters/0/members/0" }]);
    // The tick read the Env while the member was out...
    const cluster = await readCluster(deps.kube, t.ns, "local");
    const snapshot = cluster.envs.find((e) => e.env.metadata?.name === "stale");
    expect(snapshot?.env.spec.clusters?.[0]?.members ?? []).toEqual([]);
    // ...the member is back before its run starts: the run re-reads and keeps the pool.
    await patchEnv("stale", [{ op: "add", path: "/spec/clusters/0/members/-", value: member("stale-a", 1) }]);
    const report = await reconcileEnv(deps, t.ns, "stale", snapshot);
    expect(report.outcomes.filter((o) => o.op === "delete")).toEqual([]);
    expect(((await findPool("stale-a")) as SandboxPool).metadata?.deletionTimestamp).toBeUndefined();
  });

  it("two racing Env runs make each write once", async () => {
    await createEnv("race", [member("race-a", 1), member("race-b", 1)]);
    const reports = await Promise.all([1, 2, 3].map(() => reconcileEnv(deps, t.ns, "race")));
    const done = reports.flatMap((r) =>
      r.outcomes.filter((o) => o.result === "done").map((o) => `${o.op} ${o.target}`),
    );
    expect(done.filter((d) => d.startsWith("create")).sort()).toEqual([
      `create SandboxPool/${t.ns}/race-a`,
      `create SandboxPool/${t.ns}/race-b`,
    ]);
    expect(done.filter((d) => d.startsWith("patch-status"))).toHaveLength(1);
    const created = (await eventsAbout(core, t.ns, "race-a")).filter((e) => e.reason === "MemberCreated");
    expect(created).toHaveLength(1);
  });

  it("adopts a legacy pool without disturbing its running sandbox", async () => {
    await t.createPool("legacy", 2);
    await tickUntil(deps, t.ns, "legacy Ready", async () => readyIdle(await pods("legacy"), 2));
    const [pod] = await pods("legacy");
    await claimSandbox(deps, pod as V1Pod, {
      sandboxId: "sbx-legacy",
      containerImages: { sandbox: "registry.local/sandbox/agent:1" },
    });
    const running = await tickUntil(deps, t.ns, "legacy sandbox running", async () =>
      (await pods("legacy")).find((p) => phaseOf(p) === "running"),
    );
    const before = (await findPool("legacy")) as SandboxPool;

    const adopting = { ...deps, adoptPools: true };
    await tickUntil(adopting, t.ns, "legacy adopted", async () => {
      const pool = await findPool("legacy");
      return pool?.metadata?.ownerReferences?.some((r) => r.kind === "SandboxEnv" && r.name === "legacy");
    });
    const after = (await findPool("legacy")) as SandboxPool;
    expect(after.spec).toEqual(before.spec);
    expect(after.metadata?.labels?.["agentbox.navix.sh/env"]).toBe("legacy");
    expect(after.metadata?.ownerReferences?.find((r) => r.kind === "SandboxEnv")?.controller).toBe(false);
    const env = await getEnv("legacy");
    expect(env.spec.clusters?.[0]?.members?.[0]).toMatchObject({
      name: "legacy",
      config: { scalingGroup: "" },
    });
    // The same pod, still running the same container.
    await tick(adopting, { namespace: t.ns, periodMs: 0, jitter: 0, concurrency: 4 });
    const still = (await pods("legacy")).find((p) => p.metadata?.name === running.metadata?.name);
    expect(still?.metadata?.uid).toBe(running.metadata?.uid);
    expect(phaseOf(still as V1Pod)).toBe("running");
    expect(still?.status?.containerStatuses?.[0]?.containerID).toBe(
      running.status?.containerStatuses?.[0]?.containerID,
    );
    expect((await pods("legacy")).length).toBe(2);
  });

  it("references the Env's pull Secret in its members once it exists", async () => {
    await createEnv("pull", [member("pull-a", 0)]);
    await reconcileEnv(deps, t.ns, "pull");
    const secrets = (p?: SandboxPool) =>
      (p?.spec.template?.spec as { imagePullSecrets?: unknown } | undefined)?.imagePullSecrets;
    expect(secrets(await findPool("pull-a"))).toBeUndefined();
    await core.createNamespacedSecret({
      namespace: t.ns,
      body: {
        metadata: { name: "ips-pull" },
        type: "kubernetes.io/dockerconfigjson",
        data: { ".dockerconfigjson": btoa('{"auths":{}}') },
      },
    });
    await reconcileEnv(deps, t.ns, "pull");
    expect(secrets(await findPool("pull-a"))).toEqual([{ name: "ips-pull" }]);
  });

  it("a tick over Envs and pools at rest reads a fixed number of lists and writes nothing", async () => {
    await tickUntil(deps, t.ns, "a tick without writes", async () => {
      const report = await tick(deps, { namespace: t.ns, periodMs: 0, jitter: 0, concurrency: 4 });
      return report.writes === 0 ? report : undefined;
    });
    // A catalog read of its own: the host shares one for CATALOG_READ_SHARE_MS, and the tick
    // before this one may have read it within that time.
    const fresh: HostDeps = {
      ...deps,
      catalogReads: new SharedRead(CATALOG_READ_SHARE_MS, () => Date.now()),
    };
    const report = await tick(fresh, { namespace: t.ns, periodMs: 0, jitter: 0, concurrency: 4 });
    expect(report).toMatchObject({ writes: 0, failed: 0 });
    expect(report.envs).toBeGreaterThanOrEqual(4);
    // Pools, pods, Envs, templates, the pull Secrets' names, the sandboxes' egress policies and
    // SandboxSnapshots (the sweeps of leftovers): seven lists, whatever the counts, and one read
    // of the instance type catalog (the sample Env names a type).
    expect(report.requests).toBe(8);
  });

  it("the copy-template step leaves an Env member alone (its Env renders it)", async () => {
    await createEnv("steps", [member("steps-a", 1)]);
    await reconcileEnv(deps, t.ns, "steps");
    await reconcilePool(deps, t.ns, "steps-a");
    const pool = (await findPool("steps-a")) as SandboxPool;
    // A member pool is rendered by its Env: the copy-template step leaves it alone.
    expect(pool.metadata?.annotations?.["agentbox.navix.sh/overrides"]).toBeUndefined();
  });
});
