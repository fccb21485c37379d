import { describe, expect, it } from "vitest";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { isPublicTemplate, templateServing, templateSummaries } from "../../lib/claims/template-summaries.ts";
import type { SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import {
  buildIdOf,
  e2bTemplates,
  e2bTemplateWithBuilds,
  findE2bTemplate,
} from "../../lib/e2b/template-answers.ts";

// What GET /v1/templates and E2B's GET /templates show, from plain objects: resources from the
// pod template's main container, what serves a template (the create's own choice functions), and
// E2B's Template fields with the values we cannot know fixed.

const alice: Tenant = { team: "research", user: "alice" };
const settings = { envdVersion: "0.5.7" };
const CLUSTER = "dev";

function template(name: string, extra: Partial<SandboxTemplate["spec"]> = {}, meta = {}): SandboxTemplate {
  return {
    metadata: { name, uid: `uid-${name}`, generation: 2, creationTimestamp: "2026-11-01T10:00:00Z", ...meta },
    spec: {
      template: {
        spec: {
          containers: [
            {
              name: "sandbox",
              image: "img:1",
              resources: { requests: { cpu: "250m", memory: "512Mi" }, limits: { cpu: "2", memory: "1Gi" } },
            },
            { name: "sidecar", image: "side:1", resources: { limits: { cpu: "8", memory: "8Gi" } } },
          ],
        },
      },
      ...extra,
    },
  } as SandboxTemplate;
}

function pool(namespace: string, name: string, templateName: string | undefined, idle = 0): SandboxPool {
  return {
    metadata: {
      namespace,
      name,
      uid: `uid-${name}`,
      generation: 1,
      creationTimestamp: "2026-11-02T10:00:00Z",
    },
    spec: {
      replicas: 1,
      podCreationImagePolicy: "IdleImage",
      ...(templateName ? { templateName } : {}),
      template: {
        spec: {
          containers: [
            { name: "s", image: "img:1", resources: { requests: { cpu: "1500m", memory: "300Mi" } } },
          ],
        },
      },
    },
    status: { idleReplicas: idle },
  } as SandboxPool;
}

function env(namespace: string, name: string, templateName: string, clusterID = CLUSTER): SandboxEnv {
  return {
    metadata: { namespace, name },
    spec: { templateRef: { name: templateName }, clusters: [{ clusterID, members: [{ name: "m1" }] }] },
  } as SandboxEnv;
}

describe("templateServing", () => {
  it("names the template's live pools and local Envs, and is ready when a create finds one", () => {
    const t = template("py");
    const gone = {
      ...pool("ns", "old", "py"),
      metadata: { namespace: "ns", name: "old", deletionTimestamp: "x" },
    };
    const pools = [
      pool("ns", "b", "py"),
      pool("ns", "a", "py"),
      pool("ns", "other", "go"),
      gone as SandboxPool,
    ];
    const envs = [env("ns", "e", "py"), env("ns", "far", "py", "elsewhere"), env("ns", "g", "go")];
    expect(templateServing(t, pools, envs, alice, CLUSTER)).toEqual({
      pools: ["ns/a", "ns/b"],
      envs: ["ns/e"],
      ready: true,
      degraded: false,
    });
    // A host that does not route Envs (no cluster ID) never resolves a template to one.
    expect(templateServing(t, [], envs, alice, undefined)).toMatchObject({ envs: [], ready: false });
  });

  it("is not ready, saying why, when nothing serves it or its pod template cannot become a pod", () => {
    expect(templateServing(template("py"), [pool("ns", "x", "go")], [], alice, CLUSTER)).toEqual({
      pools: [],
      envs: [],
      ready: false,
      degraded: false,
      why: expect.stringMatching(/no pool or Env is made from it/),
    });
    const broken = {
      metadata: { name: "bad" },
      spec: { template: { spec: { containers: [] } } },
    } as SandboxTemplate;
    const served = templateServing(broken, [pool("ns", "p", "bad", 1)], [], alice, CLUSTER);
    expect(served).toMatchObject({ ready: false, degraded: true, pools: ["ns/p"] });
    expect(served.why).toMatch(/pods cannot be rendered/);
  });
});

describe("isPublicTemplate", () => {
  it("is public without rules or with a rule naming nobody; restricted otherwise", () => {
    expect(isPublicTemplate(template("a"))).toBe(true);
    expect(isPublicTemplate(template("a", { visibility: { rules: [{}] } }))).toBe(true);
    expect(isPublicTemplate(template("a", { visibility: { rules: [{ team: "research" }] } }))).toBe(false);
    expect(isPublicTemplate(template("a", { visibility: { rules: [{ users: ["bob"] }] } }))).toBe(false);
    expect(isPublicTemplate(undefined)).toBe(false);
  });
});

describe("templateSummaries", () => {
  it("lists each template by name with its main container's resources as written", () => {
    const out = templateSummaries(
      {
        templates: [template("zz"), template("py", { description: "Python", version: "v1" })],
        pools: [pool("ns", "p", "py", 2)],
        envs: [],
      },
      alice,
      CLUSTER,
    );
    expect(out.map((t) => t.name)).toEqual(["py", "zz"]);
    expect(out[0]).toEqual({
      name: "py",
      aliases: ["py"],
      description: "Python",
      version: "v1",
      public: true,
      resources: { requests: { cpu: "250m", memory: "512Mi" }, limits: { cpu: "2", memory: "1Gi" } },
      pools: ["ns/p"],
      envs: [],
      ready: true,
      degraded: false,
      createdAt: "2026-11-01T10:00:00.000Z",
    });
    expect(out[1]).toMatchObject({ name: "zz", ready: false });
  });
});

describe("e2bTemplates", () => {
  const restricted = template(
    "py",
    { visibility: { rules: [{ team: "research" }] } },
    {
      managedFields: [
        { manager: "kubectl", operation: "Update", time: "2026-11-03T09:00:00Z" },
        { manager: "agentbox", operation: "Update", subresource: "status", time: "2026-11-05T09:00:00Z" },
      ],
    },
  );
  const targets = {
    templates: [restricted, template("empty")],
    pools: [pool("ns", "p", "py", 1), pool("ns", "bare", undefined)],
    envs: [],
  };
  const listed = e2bTemplates(targets, alice, CLUSTER, settings);

  it("lists templates, then pools as namespace/name, with CPU and memory from the main container's limits", () => {
    expect(listed.map((t) => t.templateID)).toEqual(["empty", "py", "ns/bare", "ns/p"]);
    const py = findE2bTemplate(listed, "py");
    expect(py).toEqual({
      templateID: "py",
      buildID: buildIdOf(restricted.metadata),
      cpuCount: 2,
      memoryMB: 1024,
      diskSizeMB: 0,
      public: false,
      aliases: ["py"],
      names: ["py"],
      createdAt: "2026-11-01T10:00:00.000Z",
      // The spec's last write: the status write of the control plane is not an update of the template.
      updatedAt: "2026-11-03T09:00:00.000Z",
      createdBy: null,
      lastSpawnedAt: null,
      spawnCount: 0,
      buildCount: 2,
      envdVersion: "0.5.7",
      buildStatus: "ready",
    });
    expect(findE2bTemplate(listed, "empty")).toMatchObject({ buildStatus: "waiting", public: true });
  });

  it("shows a pool with its own pod template (requests when it sets no limits), public as its template", () => {
    // 1500m rounds up to 2 whole CPUs; 300Mi is 300 MiB.
    expect(findE2bTemplate(listed, "ns/p")).toMatchObject({
      templateID: "ns/p",
      names: ["ns/p"],
      cpuCount: 2,
      memoryMB: 300,
      public: false,
      buildStatus: "ready",
      updatedAt: "2026-11-02T10:00:00.000Z",
    });
    expect(findE2bTemplate(listed, "ns/bare")).toMatchObject({ public: true });
    expect(findE2bTemplate(listed, "ns/none")).toBeUndefined();
    expect(findE2bTemplate(listed, "nope")).toBeUndefined();
  });

  it("leaves out pools being deleted", () => {
    const gone = {
      ...pool("ns", "gone", "py"),
      metadata: { namespace: "ns", name: "gone", deletionTimestamp: "x" },
    };
    const out = e2bTemplates({ ...targets, pools: [gone as SandboxPool] }, alice, CLUSTER, settings);
    expect(out.map((t) => t.templateID)).toEqual(["empty", "py"]);
  });

  it("answers GET /templates/{id} as TemplateWithBuilds: one build, the spec as it is now", () => {
    const py = findE2bTemplate(listed, "py");
    if (!py) throw new Error("py not listed");
    expect(e2bTemplateWithBuilds(py).builds).toEqual([
      {
        buildID: py.buildID,
        status: "ready",
        createdAt: py.updatedAt,
        updatedAt: py.updatedAt,
        cpuCount: 2,
        memoryMB: 1024,
        diskSizeMB: 0,
        envdVersion: "0.5.7",
      },
    ]);
  });
});

describe("buildIdOf", () => {
  it("is a UUID that stays while the spec does and changes with its generation", () => {
    const id = buildIdOf({ uid: "u1", generation: 1 });
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(buildIdOf({ uid: "u1", generation: 1 })).toBe(id);
    expect(buildIdOf({ uid: "u1", generation: 2 })).not.toBe(id);
    expect(buildIdOf({ uid: "u2", generation: 1 })).not.toBe(id);
  });
});
