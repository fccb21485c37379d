import { describe, expect, it } from "vitest";
import {
  MANAGED_BY_LABEL,
  POD_REVISION_LABEL,
  SANDBOX_PHASE_LABEL,
  SANDBOX_POOL_LABEL,
  SANDBOX_PROTECTION_FINALIZER,
  SYNC_SOURCE_LABEL,
  TEMPLATE_DOCS_ANNOTATION,
  TEMPLATE_POOL_DOCS_ANNOTATION,
} from "../../lib/crd/keys.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import {
  CLAIM_SHARD_LABEL,
  CLAIM_SHARDS,
  candidateSelectors,
  GROUP_TARGET,
  groupSize,
  selectorsAfterFirst,
  shardGroupSelector,
  shardOrder,
} from "../../lib/pool/claim-shards.ts";
import { podName } from "../../lib/pool/pod-name.ts";
import {
  idleImages,
  POOLED_POD_GRACE_SECONDS,
  podRevision,
  renderPod,
  syncAnnotationsFromTemplate,
  syncLabelsFromTemplate,
} from "../../lib/pool/render-pod.ts";

const resources = { requests: { cpu: "1", memory: "1Gi" }, limits: { cpu: "2", memory: "2Gi" } };

function pool(spec: Partial<SandboxPool["spec"]> = {}, name = "web"): SandboxPool {
  return {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxPool",
    metadata: { name, namespace: "team-a", uid: "uid-1", generation: 3 },
    spec: {
      replicas: 2,
      podCreationImagePolicy: "IdleImage",
      idleImage: "idle:1",
      template: {
        metadata: {
          labels: {
            app: "sandbox",
            [SYNC_SOURCE_LABEL]: "global",
            [SANDBOX_POOL_LABEL]: "spoofed",
            [SANDBOX_PHASE_LABEL]: "running",
          },
          annotations: {
            note: "kept",
            [TEMPLATE_DOCS_ANNOTATION]: "# docs",
            [TEMPLATE_POOL_DOCS_ANNOTATION]: "# old docs",
          },
        },
        spec: {
          nodeName: "node-1",
          containers: [
            { name: "main", image: "sandbox:1", resources },
            { name: "sidecar", image: "proxy:1" },
          ],
        },
      },
      ...spec,
    },
  };
}

describe("renderPod", () => {
  it("names the Pod after its slot, in the pool's namespace, with system labels winning", () => {
    const pod = renderPod(pool(), 4);
    expect(pod.apiVersion).toBe("v1");
    expect(pod.kind).toBe("Pod");
    expect(pod.metadata?.name).toBe("web-4");
    expect(pod.metadata?.namespace).toBe("team-a");
    expect(pod.metadata?.labels).toEqual({
      app: "sandbox",
      [SANDBOX_POOL_LABEL]: "web",
      [SANDBOX_PHASE_LABEL]: "idle",
      [MANAGED_BY_LABEL]: "sandbox-api-server",
      // Slot 4 of 64 claim shards.
      [CLAIM_SHARD_LABEL]: "4",
      [POD_REVISION_LABEL]: podRevision(pool()),
    });
    expect(renderPod(pool(), 68).metadata?.labels?.[CLAIM_SHARD_LABEL]).toBe("4");
    expect(pod.metadata?.annotations).toEqual({ note: "kept" });
  });

  it("carries the protection finalizer and a controlling ownerReference to the pool", () => {
    const pod = renderPod(pool(), 0);
    expect(pod.metadata?.finalizers).toEqual([SANDBOX_PROTECTION_FINALIZER]);
    expect(pod.metadata?.ownerReferences).toEqual([
      {
        apiVersion: "agents.navix.sh/v1alpha1",
        kind: "SandboxPool",
        name: "web",
        uid: "uid-1",
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  it.each([
    ["IdleImage", "idle:1", "idle:1"],
    ["PoolDefaultImage", "idle:1", "sandbox:1"],
    ["IdleImage", undefined, "sandbox:1"],
    ["PoolDefaultImage", undefined, "sandbox:1"],
    [undefined, "idle:1", "idle:1"],
  ] as const)("policy %s with idleImage %s starts the first container on %s", (policy, idleImage, image) => {
    const p = pool({ podCreationImagePolicy: policy, idleImage });
    const spec = renderPod(p, 0).spec;
    expect(spec?.containers.map((c) => c.image)).toEqual([image, "proxy:1"]);
  });

  it("gives a first container without an image the idle image under either policy", () => {
    for (const policy of ["IdleImage", "PoolDefaultImage"] as const) {
      const p = pool({ podCreationImagePolicy: policy });
      (p.spec.template as { spec: { containers: { image?: string }[] } }).spec.containers[0]!.image =
        undefined;
      expect(renderPod(p, 0).spec?.containers[0]?.image).toBe("idle:1");
    }
  });

  it("keeps the template's resources, drops nodeName and never mutates the pool", () => {
    const p = pool();
    const before = structuredClone(p);
    const spec = renderPod(p, 0).spec;
    expect(spec?.containers[0]?.resources).toEqual(resources);
    expect(spec).not.toHaveProperty("nodeName");
    expect(p).toEqual(before);
  });

  it("gives pooled pods a 2 s grace unless the template sets one, and the default moves no revision", () => {
    expect(renderPod(pool(), 0).spec?.terminationGracePeriodSeconds).toBe(POOLED_POD_GRACE_SECONDS);
    expect(POOLED_POD_GRACE_SECONDS).toBe(2);
    const own = pool();
    if (own.spec.template?.spec)
      (own.spec.template.spec as Record<string, unknown>).terminationGracePeriodSeconds = 30;
    expect(renderPod(own, 0).spec?.terminationGracePeriodSeconds).toBe(30);
    // The default is not hashed into the revision (pods made before it keep theirs: no rollout):
    // a template that sets the same 2 s renders the same spec under another revision.
    const explicit = pool();
    if (explicit.spec.template?.spec)
      (explicit.spec.template.spec as Record<string, unknown>).terminationGracePeriodSeconds = 2;
    expect(renderPod(explicit, 0).spec).toEqual(renderPod(pool(), 0).spec);
    expect(podRevision(explicit)).not.toBe(podRevision(pool()));
  });

  it("uses the truncated slot name for long pool names", () => {
    const name = "x".repeat(80);
    const pod = renderPod(pool({}, name), 1);
    expect(pod.metadata?.name).toBe(podName(name, 1));
    expect(pod.metadata?.labels?.[SANDBOX_POOL_LABEL]).toBe(name);
  });

  it("refuses a pool not read from the API server", () => {
    const p = pool();
    p.metadata = { name: "web", namespace: "team-a" };
    expect(() => renderPod(p, 0)).toThrow(/uid/);
  });

  it("renders a pool without template metadata", () => {
    const p = pool({ template: { spec: { containers: [{ name: "main", image: "a:1" }] } } });
    const pod = renderPod(p, 0);
    expect(pod.metadata?.annotations).toEqual({});
    expect(pod.metadata?.labels?.[SANDBOX_POOL_LABEL]).toBe("web");
  });
});

describe("idleImages", () => {
  it.each([
    ["idle:1", { main: "idle:1", sidecar: "proxy:1" }],
    [undefined, { main: "sandbox:1", sidecar: "proxy:1" }],
  ])("with idleImage %s", (idleImage, images) => {
    expect(idleImages(pool({ idleImage }))).toEqual(images);
  });

  it("is empty without a template", () => {
    expect(idleImages(pool({ template: undefined }))).toEqual({});
  });
});

describe("template sync", () => {
  it("skips the excluded keys and non-string values; template values win over dst", () => {
    expect(
      syncLabelsFromTemplate({ a: "1", b: "1" }, { b: "2", [SYNC_SOURCE_LABEL]: "global", n: 3 }),
    ).toEqual({ a: "1", b: "2" });
    expect(
      syncAnnotationsFromTemplate(
        {},
        { x: "y", [TEMPLATE_DOCS_ANNOTATION]: "d", [TEMPLATE_POOL_DOCS_ANNOTATION]: "p" },
      ),
    ).toEqual({ x: "y" });
    expect(syncLabelsFromTemplate({ a: "1" }, undefined)).toEqual({ a: "1" });
  });
});

describe("candidateSelectors", () => {
  const idle = "agentbox.navix.sh/sandbox-pool=py,agentbox.navix.sh/sandbox-phase=idle";
  const groupOf = (selector: string) =>
    /claim-shard in \(([^)]*)\)/.exec(selector)?.[1]?.split(",").filter(Boolean) ?? [];

  it("covers every shard once, in groups that double from the first size, then every idle pod", () => {
    const shards = shardOrder(() => 0.5);
    const selectors = candidateSelectors("py", shards, 3);
    expect(selectors.every((s) => s.startsWith(idle))).toBe(true);
    expect(selectors.slice(0, -1).map((s) => groupOf(s).length)).toEqual([3, 6, 12, 24, 19]);
    expect(selectors.slice(0, -1).flatMap(groupOf)).toEqual(shards);
    expect(selectors.at(-1)).toBe(idle);
  });

  it("sizes groups to hold about GROUP_TARGET idle pods: one shard for a big pool, all for a tiny one", () => {
    expect(groupSize(CLAIM_SHARDS * GROUP_TARGET)).toBe(1);
    expect(groupSize(1000)).toBe(1);
    expect(groupSize(400)).toBe(3);
    expect(groupSize(100)).toBe(10);
    expect(groupSize(3)).toBe(CLAIM_SHARDS);
    // No count yet (a new pool's status) or a drained pool: every shard in one list.
    expect(groupSize(0)).toBe(CLAIM_SHARDS);
    expect(groupSize(Number.NaN)).toBe(CLAIM_SHARDS);
    expect(candidateSelectors("py", shardOrder(Math.random), groupSize(0))).toHaveLength(2);
  });

  it("after a first page, lists the shards it did not cover, in groups sized from the idle count", () => {
    const shards = shardOrder(() => 0.3);
    const afterListed = selectorsAfterFirst("py", shards, true, 1000);
    expect(afterListed.slice(0, -1).flatMap(groupOf)).toEqual(shards.slice(1));
    expect(groupOf(afterListed[0] ?? "")).toHaveLength(groupSize(1000));
    expect(selectorsAfterFirst("py", shards, false, 1000).slice(0, -1).flatMap(groupOf)).toEqual(shards);
    // No count in the pool's status yet: every shard in one list, then every idle pod.
    expect(selectorsAfterFirst("py", shards, false, undefined)).toHaveLength(2);
  });

  it("draws a different shard order for different random draws, each a permutation", () => {
    const a = shardOrder(() => 0.1);
    const b = shardOrder(() => 0.9);
    expect(a).not.toEqual(b);
    expect([...a].sort()).toEqual([...b].sort());
    expect(new Set(a).size).toBe(CLAIM_SHARDS);
    expect(shardGroupSelector("py", ["7", "42"])).toBe(`${idle},${CLAIM_SHARD_LABEL} in (7,42)`);
  });
});
