import { describe, expect, it } from "vitest";
import {
  POOL_OVERRIDES_ANNOTATION,
  POOL_TEMPLATE_NAME_ANNOTATION,
  POOL_TEMPLATE_VERSION_ANNOTATION,
} from "../../lib/crd/keys.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { creationBlock, replicaFailure } from "../../lib/pool/creation-block.ts";
import {
  copyTemplate,
  refreshFromTemplate,
  templateCopyNeeded,
  templateCopyOps,
} from "../../lib/pool/template-copy.ts";
import { planTemplateCopy, planTemplateRefresh } from "../../lib/reconcile/template-copy.ts";

// The template copy on plain data: what a pool takes from its template, what it records, and
// when a pool may create Pods at all.

const containers = (image: string) => ({ spec: { containers: [{ name: "main", image }] } });

function template(version: string | undefined, spec: Partial<SandboxTemplate["spec"]> = {}): SandboxTemplate {
  return {
    metadata: {
      name: "python",
      labels: { tier: "gold", "agentbox.io/sync-source": "global" },
      annotations: { "agentbox.navix.sh/docs": "# docs", "agentbox.navix.sh/pool-docs": "old", owner: "ml" },
    },
    spec: {
      ...(version ? { version } : {}),
      template: containers("python:3.12"),
      idleImage: "idle:1",
      runtimes: [{ name: "e2b", port: 49983, protocol: "TCP" }],
      ...spec,
    },
  };
}

function pool(spec: Partial<SandboxPool["spec"]>, annotations?: Record<string, string>): SandboxPool {
  return {
    metadata: {
      name: "p",
      namespace: "ns",
      resourceVersion: "7",
      labels: { tier: "bronze", app: "mine" },
      ...(annotations ? { annotations } : {}),
    },
    spec: { replicas: 2, podCreationImagePolicy: "IdleImage", templateName: "python", ...spec },
  };
}

const recorded = (version: string, overrides: object) => ({
  [POOL_TEMPLATE_NAME_ANNOTATION]: "python",
  [POOL_TEMPLATE_VERSION_ANNOTATION]: version,
  [POOL_OVERRIDES_ANNOTATION]: JSON.stringify(overrides),
});

describe("copyTemplate", () => {
  it("fills every unset embedded field from the template; inline fields win and are the overrides", () => {
    const copy = copyTemplate(pool({ idleImage: "idle:mine" }), template("v1"));
    expect(copy.embedded).toEqual({
      template: containers("python:3.12"),
      idleImage: "idle:mine",
      runtimes: [{ name: "e2b", port: 49983, protocol: "TCP" }],
    });
    expect(copy.annotations).toEqual({ owner: "ml", ...recorded("v1", { idleImage: "idle:mine" }) });
    // Template labels win; the sync-source label and the docs annotations are never copied.
    expect(copy.labels).toEqual({ tier: "gold", app: "mine" });
  });

  it("records an inline field equal to the template's as no override, and no version as empty", () => {
    const copy = copyTemplate(pool({ template: containers("python:3.12") }), template(undefined));
    expect(copy.annotations[POOL_OVERRIDES_ANNOTATION]).toBe("{}");
    expect(copy.annotations[POOL_TEMPLATE_VERSION_ANNOTATION]).toBe("");
  });

  it("rebuilds a pool switched to another template from the new one and its recorded overrides", () => {
    const copiedFromA = pool(
      { templateName: "node", template: containers("python:3.12"), idleImage: "idle:mine", runtimes: [] },
      recorded("v1", { idleImage: "idle:mine" }),
    );
    const b = template("v7", { template: containers("node:22") });
    b.metadata = { ...b.metadata, name: "node" };
    const copy = copyTemplate(copiedFromA, b);
    expect(copy.embedded).toEqual({
      template: containers("node:22"),
      idleImage: "idle:mine",
      runtimes: [{ name: "e2b", port: 49983, protocol: "TCP" }],
    });
    expect(copy.annotations).toMatchObject({
      [POOL_TEMPLATE_NAME_ANNOTATION]: "node",
      [POOL_TEMPLATE_VERSION_ANNOTATION]: "v7",
      [POOL_OVERRIDES_ANNOTATION]: JSON.stringify({ idleImage: "idle:mine" }),
    });
  });

  it("patches only what differs, and nothing once the pool is the copy", () => {
    const p = pool({ idleImage: "idle:mine" });
    const copy = copyTemplate(p, template("v1"));
    const ops = templateCopyOps(p, copy);
    expect(ops.map((o) => o.path)).toEqual([
      "/spec/template",
      "/spec/runtimes",
      "/metadata/labels/tier",
      "/metadata/annotations",
    ]);
    const copied: SandboxPool = {
      ...p,
      metadata: { ...p.metadata, labels: copy.labels, annotations: copy.annotations },
      spec: { ...p.spec, ...copy.embedded },
    };
    expect(templateCopyOps(copied, copyTemplate(copied, template("v1")))).toEqual([]);
    expect(templateCopyNeeded(copied)).toBe(false);
  });
});

describe("templateCopyNeeded", () => {
  it.each([
    ["a pool without templateName", pool({ templateName: undefined }), false],
    ["a pool never copied", pool({}), true],
    [
      "a pool marked by the old webhook (name only)",
      pool({}, { [POOL_TEMPLATE_NAME_ANNOTATION]: "python" }),
      true,
    ],
    ["a copied pool", pool({}, recorded("v1", {})), false],
    ["a pool whose templateName changed", pool({ templateName: "node" }, recorded("v1", {})), true],
  ])("%s: %s", (_what, p, needed) => {
    expect(templateCopyNeeded(p)).toBe(needed);
  });

  it("is false for an Env member, whatever its annotations: its Env renders it", () => {
    const member = pool({});
    member.metadata = {
      ...member.metadata,
      ownerReferences: [{ apiVersion: "agents.navix.sh/v1alpha1", kind: "SandboxEnv", name: "e", uid: "u" }],
    };
    expect(templateCopyNeeded(member)).toBe(false);
  });
});

describe("refreshFromTemplate", () => {
  it("takes the template's current fields and puts the recorded overrides back on top", () => {
    const copied = pool(
      { idleImage: "idle:mine", template: containers("python:3.12"), runtimes: [] },
      recorded("v1", { idleImage: "idle:mine" }),
    );
    const newer = template("v2", { template: containers("python:3.13"), runtimes: undefined });
    const refreshed = refreshFromTemplate(copied, newer);
    expect(refreshed.ok && refreshed.copy.embedded).toEqual({
      template: containers("python:3.13"),
      idleImage: "idle:mine",
    });
    expect(refreshed.ok && refreshed.copy.annotations[POOL_TEMPLATE_VERSION_ANNOTATION]).toBe("v2");
    // A field neither the template nor the overrides have is removed from the pool.
    expect(refreshed.ok && templateCopyOps(copied, refreshed.copy)).toContainEqual({
      op: "remove",
      path: "/spec/runtimes",
    });
  });

  it("refuses an overrides annotation that is not what a copy writes", () => {
    for (const bad of ["{not json", '{"idleImage": 3}']) {
      const r = refreshFromTemplate(pool({}, { [POOL_OVERRIDES_ANNOTATION]: bad }), template("v2"));
      expect(r).toEqual({ ok: false, reason: expect.stringContaining(POOL_OVERRIDES_ANNOTATION) });
    }
  });
});

describe("planTemplateCopy and planTemplateRefresh", () => {
  it("copies under a resourceVersion test with an Event, and not at all without the template", () => {
    const [action] = planTemplateCopy(pool({}), template("v1"));
    const patch = action?.write.op === "patch" ? action.write.patch : [];
    expect(patch[0]).toEqual({ op: "test", path: "/metadata/resourceVersion", value: "7" });
    expect(patch.length).toBeGreaterThan(1);
    expect(action?.event?.reason).toBe("TemplateCopied");
    expect(planTemplateCopy(pool({}), null)).toEqual([]);
    expect(planTemplateCopy(pool({}, recorded("v1", {})), template("v1"))).toEqual([]);
  });

  it("refuses Env members, pools without a template, and missing templates, with the reason", () => {
    const member = pool({});
    member.metadata = {
      ...member.metadata,
      ownerReferences: [{ apiVersion: "agents.navix.sh/v1alpha1", kind: "SandboxEnv", name: "e", uid: "u" }],
    };
    expect(planTemplateRefresh(member, template("v2"))).toEqual({
      ok: false,
      reason: expect.stringContaining('member of SandboxEnv "e"'),
    });
    expect(planTemplateRefresh(pool({ templateName: undefined }), template("v2"))).toMatchObject({
      ok: false,
    });
    expect(planTemplateRefresh(pool({}), null)).toEqual({
      ok: false,
      reason: 'SandboxTemplate "python" does not exist',
    });
    const refreshed = planTemplateRefresh(pool({}, recorded("v1", {})), template("v2"));
    expect(refreshed.ok && refreshed.actions[0]?.event?.reason).toBe("TemplateRefreshed");
  });
});

describe("creationBlock and replicaFailure", () => {
  it("blocks a pool waiting for its copy (naming a missing template) or without a usable container", () => {
    expect(creationBlock(pool({}), null)).toEqual({
      reason: "TemplateNotFound",
      message: 'SandboxTemplate "python" does not exist; no pods are created until it does',
    });
    expect(creationBlock(pool({}), template("v1"))?.reason).toBe("TemplateNotCopied");
    const empty = pool({ templateName: undefined, template: { spec: { containers: [] } } });
    expect(creationBlock(empty, undefined)?.reason).toBe("InvalidPodTemplate");
    const ready = pool({ template: containers("python:3.12") }, recorded("v1", {}));
    expect(creationBlock(ready, undefined)).toBeUndefined();
  });

  it("reports a refused create, clears once one goes through or none is missing, else keeps", () => {
    const block = { reason: "TemplateNotFound" as const, message: "m" };
    expect(replicaFailure(block, { created: 0 }, 2)).toBe(block);
    expect(
      replicaFailure(undefined, { created: 1, error: "create pod: 403 Forbidden: exceeded quota" }, 2),
    ).toEqual({
      reason: "FailedCreate",
      message: "create pod: 403 Forbidden: exceeded quota",
    });
    expect(replicaFailure(undefined, { created: 1 }, 2)).toBeNull();
    expect(replicaFailure(undefined, { created: 0 }, 0)).toBeNull();
    expect(replicaFailure(undefined, { created: 0 }, 1)).toBeUndefined();
  });
});
