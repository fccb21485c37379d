import { describe, expect, it } from "vitest";
import { missingFieldPatch } from "../../lib/admission/missing-field-patch.ts";
import { parseAdmissionReview } from "../../lib/admission/review.ts";
import { mutateRequest, validateRequest, validationIssues } from "../../lib/admission/validate.ts";

const GROUP = "agents.navix.sh";

const env = (spec: Record<string, unknown>) => ({
  apiVersion: `${GROUP}/v1alpha1`,
  kind: "SandboxEnv",
  metadata: { name: "e", namespace: "n" },
  spec: { templateRef: { name: "t" }, ...spec },
});
const pool = (spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) => ({
  apiVersion: `${GROUP}/v1alpha1`,
  kind: "SandboxPool",
  metadata: { name: "p", namespace: "n", ...metadata },
  spec: { replicas: 1, template: { spec: { containers: [{ name: "main", image: "img:1" }] } }, ...spec },
});
const template = (spec: Record<string, unknown>) => ({
  apiVersion: `${GROUP}/v1alpha1`,
  kind: "SandboxTemplate",
  metadata: { name: "t" },
  spec: { template: { spec: { containers: [{ name: "main", image: "img:1" }] } }, ...spec },
});
const member = (name: string, config: Record<string, unknown> = {}) => ({ name, config });
const paths = (kind: string, obj: unknown) => validationIssues(kind, obj).map((i) => i.path);

describe("SandboxEnv checks", () => {
  it("accepts a well-formed env", () => {
    const e = env({
      clusters: [{ clusterID: "local", members: [member("a", { instanceType: "small", multiplier: 2 })] }],
      autoscaling: { groups: [{ name: "default", maxReplicas: 10 }] },
    });
    expect(validationIssues("SandboxEnv", e)).toEqual([]);
  });

  it.each([
    ["mode OnDemandJob", env({ mode: "OnDemandJob" }), "spec.mode"],
    [
      "group without member",
      env({
        clusters: [{ clusterID: "c", members: [member("a")] }],
        autoscaling: { groups: [{ name: "gpu" }] },
      }),
      "spec.autoscaling.groups[0].name",
    ],
    [
      "duplicate member across clusters",
      env({
        clusters: [
          { clusterID: "c1", members: [member("a")] },
          { clusterID: "c2", members: [member("a")] },
        ],
      }),
      "spec.clusters[1].members[0].name",
    ],
    [
      "member name not a DNS subdomain",
      env({ clusters: [{ clusterID: "c", members: [member("Bad_Name")] }] }),
      "spec.clusters[0].members[0].name",
    ],
    [
      "instanceType without multiplier",
      env({ clusters: [{ clusterID: "c", members: [member("a", { instanceType: "small" })] }] }),
      "spec.clusters[0].members[0].config.multiplier",
    ],
    [
      "defaults instanceType without multiplier",
      env({ defaults: { instanceType: "small" } }),
      "spec.defaults.multiplier",
    ],
    [
      "member min above max",
      env({ clusters: [{ clusterID: "c", members: [member("a", { minReplicas: 3, maxReplicas: 2 })] }] }),
      "spec.clusters[0].members[0].config.minReplicas",
    ],
    [
      "group min above max",
      env({
        clusters: [{ clusterID: "c", members: [member("a")] }],
        autoscaling: { groups: [{ name: "default", minReplicas: 5, maxReplicas: 1 }] },
      }),
      "spec.autoscaling.groups[0].minReplicas",
    ],
    [
      "mixed resources in one scaling group",
      env({
        clusters: [
          {
            clusterID: "c",
            members: [
              member("a", { instanceType: "small", multiplier: 1 }),
              member("b", { instanceType: "small", multiplier: 2 }),
            ],
          },
        ],
      }),
      "spec.clusters[0].members[1].config",
    ],
    [
      "member pool spec without containers",
      env({
        clusters: [
          { clusterID: "c", members: [{ name: "a", spec: { replicas: 1, template: { spec: {} } } }] },
        ],
      }),
      "spec.clusters[0].members[0].spec.template.spec.containers",
    ],
  ])("denies %s at %s", (_what, obj, path) => {
    expect(paths("SandboxEnv", obj)).toContain(path);
  });

  it("ignores members excluded from autoscaling when matching groups", () => {
    const e = env({
      clusters: [{ clusterID: "c", members: [member("a", { scalingGroup: "" })] }],
      autoscaling: { groups: [{ name: "default" }] },
    });
    const issues = validationIssues("SandboxEnv", e);
    expect(issues.map((i) => i.path)).toEqual(["spec.autoscaling.groups[0].name"]);
    expect(issues[0]!.message).toContain("members use: none");
  });
});

describe("SandboxPool and SandboxTemplate checks", () => {
  it("requires containers with names and images unless a template is referenced", () => {
    expect(paths("SandboxPool", pool({ template: { spec: { containers: [] } } }))).toEqual([
      "spec.template.spec.containers",
    ]);
    expect(paths("SandboxPool", pool({ template: undefined, templateName: "t" }))).toEqual([]);
    expect(
      paths(
        "SandboxPool",
        pool({ template: { spec: { containers: [{ name: "a", image: "" }, { name: "a" }] } } }),
      ),
    ).toEqual([
      "spec.template.spec.containers[0].image",
      "spec.template.spec.containers[1].name",
      "spec.template.spec.containers[1].image",
    ]);
    // The first container may take its image from idleImage.
    expect(
      paths(
        "SandboxPool",
        pool({ idleImage: "idle:1", template: { spec: { containers: [{ name: "a" }] } } }),
      ),
    ).toEqual([]);
  });

  it("reports schema errors with field paths before running the rules", () => {
    expect(paths("SandboxPool", pool({ replicas: -1 }))).toEqual(["spec.replicas"]);
  });

  it.each([
    [{ rules: [{ team: "t", users: ["a", "a"] }] }, "spec.visibility.rules[0].users[1]"],
    [{ rules: [{ users: [""] }] }, "spec.visibility.rules[0].users[0]"],
  ])("denies malformed visibility %j at %s", (visibility, path) => {
    expect(paths("SandboxTemplate", template({ visibility }))).toContain(path);
  });

  it("accepts, as the seed does, a rule with neither team nor users and an empty team (wildcards)", () => {
    expect(paths("SandboxTemplate", template({ visibility: { rules: [{}] } }))).toEqual([]);
    expect(
      paths("SandboxTemplate", template({ visibility: { rules: [{ team: "", users: ["u"] }] } })),
    ).toEqual([]);
  });

  it("accepts well-formed visibility and an empty rule list (public)", () => {
    expect(
      paths("SandboxTemplate", template({ visibility: { rules: [{ team: "a" }, { users: ["u"] }] } })),
    ).toEqual([]);
    expect(paths("SandboxTemplate", template({ visibility: { rules: [] } }))).toEqual([]);
  });
});

describe("sandbox fencing in pod templates", () => {
  const podTemplate = (extra: Record<string, unknown> = {}, annotations?: Record<string, string>) => ({
    ...(annotations ? { metadata: { annotations } } : {}),
    spec: {
      containers: [
        { name: "main", image: "img:1" },
        { name: "side", image: "side:1" },
      ],
      ...extra,
    },
  });
  const memberEnv = (template: unknown) =>
    env({ clusters: [{ clusterID: "c", members: [{ name: "a", spec: { replicas: 1, template } }] }] });

  it("denies hostNetwork on a template, a pool and an Env member's pool spec, naming the field", () => {
    const onNode = podTemplate({ hostNetwork: true });
    expect(paths("SandboxTemplate", template({ template: onNode }))).toEqual([
      "spec.template.spec.hostNetwork",
    ]);
    expect(paths("SandboxPool", pool({ template: onNode }))).toEqual(["spec.template.spec.hostNetwork"]);
    expect(paths("SandboxEnv", memberEnv(onNode))).toEqual([
      "spec.clusters[0].members[0].spec.template.spec.hostNetwork",
    ]);
    // Off, or unset, is the pod network: allowed.
    expect(paths("SandboxPool", pool({ template: podTemplate({ hostNetwork: false }) }))).toEqual([]);
  });

  it("denies malformed tenant-image annotations, naming each", () => {
    const bad = podTemplate(
      {},
      {
        "agentbox.navix.sh/sandbox-containers": "main,ghost",
        "agentbox.navix.sh/tenant-images": "python:3",
      },
    );
    const expected = [
      "spec.template.metadata.annotations[agentbox.navix.sh/sandbox-containers]",
      "spec.template.metadata.annotations[agentbox.navix.sh/tenant-images]",
    ];
    expect(paths("SandboxTemplate", template({ template: bad }))).toEqual(expected);
    expect(paths("SandboxPool", pool({ template: bad }))).toEqual(expected);
    expect(paths("SandboxEnv", memberEnv(bad))).toEqual(
      expected.map((p) => `spec.clusters[0].members[0].${p}`),
    );
    const res = validateRequest(request("CREATE", pool({ template: bad }), undefined, "SandboxPool"));
    expect(res.response.allowed).toBe(false);
    expect(res.response.status?.message).toContain('"ghost" is no container of the template');
    const good = podTemplate(
      {},
      { "agentbox.navix.sh/sandbox-containers": "main", "agentbox.navix.sh/tenant-images": "ghcr.io/org/*" },
    );
    expect(paths("SandboxPool", pool({ template: good }))).toEqual([]);
  });
});

const request = (operation: string, object: unknown, oldObject?: unknown, kind = "SandboxEnv") => ({
  uid: "u",
  kind: { group: GROUP, version: "v1alpha1", kind },
  operation: operation as "CREATE",
  object: object as Record<string, unknown>,
  oldObject: oldObject as Record<string, unknown> | undefined,
});

describe("validateRequest", () => {
  it("denies with every reason, each naming its field and rule", () => {
    const res = validateRequest(
      request("CREATE", env({ mode: "OnDemandJob", defaults: { instanceType: "x" } })),
    );
    expect(res.response.allowed).toBe(false);
    expect(res.response.status?.code).toBe(422);
    expect(res.response.status?.message).toContain("spec.mode: OnDemandJob is not served yet");
    expect(res.response.status?.message).toContain("[instance-type-requires-multiplier]");
  });

  it("allows updates that leave the spec alone and updates of deleting objects", () => {
    const bad = env({ mode: "OnDemandJob" });
    const relabelled = { ...bad, metadata: { ...bad.metadata, labels: { a: "b" } } };
    expect(validateRequest(request("UPDATE", relabelled, bad)).response.allowed).toBe(true);
    const deleting = {
      ...bad,
      metadata: { ...bad.metadata, deletionTimestamp: "2026-01-01T00:00:00Z" },
      spec: { ...bad.spec, x: 1 },
    };
    expect(validateRequest(request("UPDATE", deleting, bad)).response.allowed).toBe(true);
    expect(
      validateRequest(request("UPDATE", { ...bad, spec: { ...bad.spec, defaults: {} } }, bad)).response
        .allowed,
    ).toBe(false);
  });

  it("allows other groups, kinds and operations untouched", () => {
    expect(
      validateRequest({ ...request("CREATE", {}), kind: { group: "", version: "v1", kind: "Pod" } }).response
        .allowed,
    ).toBe(true);
    expect(validateRequest(request("DELETE", env({ mode: "OnDemandJob" }))).response.allowed).toBe(true);
  });

  it.each(["constructor", "toString", "__proto__", "hasOwnProperty"])(
    "takes a kind named %s in our group for what it is: none of ours, allowed unchanged",
    (kind) => {
      const review = request("CREATE", env({}), undefined, kind);
      expect(validateRequest(review).response).toEqual({ uid: "u", allowed: true });
      expect(mutateRequest(review).response).toEqual({ uid: "u", allowed: true });
      expect(validationIssues(kind, {})).toEqual([{ path: "kind", message: `unsupported kind "${kind}"` }]);
    },
  );
});

describe("mutateRequest", () => {
  const decode = (patch?: string) => (patch ? JSON.parse(atob(patch)) : []);

  it("adds only missing defaults when no template lookup is given", () => {
    const res = mutateRequest(
      request(
        "CREATE",
        pool({ templateName: "python", runtimes: [{ name: "e2b" }] }),
        undefined,
        "SandboxPool",
      ),
    );
    expect(res.response.patchType).toBe("JSONPatch");
    expect(decode(res.response.patch)).toEqual([
      { op: "add", path: "/spec/podCreationImagePolicy", value: "IdleImage" },
      { op: "add", path: "/spec/runtimes/0/protocol", value: "TCP" },
    ]);
  });

  it("copies the template into a pool that names it: unset fields, labels, the copy's record", () => {
    const stored = {
      ...template({ version: "v2", idleImage: "idle:2", runtimes: [{ name: "e2b", protocol: "TCP" }] }),
      metadata: {
        name: "python",
        labels: { team: "ml", "agentbox.io/sync-source": "global" },
        annotations: { "agentbox.navix.sh/docs": "# docs", note: "from template" },
      },
    } as never;
    const submitted = {
      apiVersion: `${GROUP}/v1alpha1`,
      kind: "SandboxPool",
      metadata: { name: "p", namespace: "n", labels: { team: "mine" } },
      spec: { replicas: 2, templateName: "python", idleImage: "idle:mine" },
    };
    const res = mutateRequest(request("CREATE", submitted, undefined, "SandboxPool"), { template: stored });
    const ops = decode(res.response.patch) as { op: string; path: string; value?: unknown }[];
    const byPath = Object.fromEntries(ops.map((o) => [o.path, o.value]));
    expect(byPath["/spec/template"]).toEqual({ spec: { containers: [{ name: "main", image: "img:1" }] } });
    expect(byPath["/spec/runtimes"]).toEqual([{ name: "e2b", protocol: "TCP" }]);
    expect(byPath).not.toHaveProperty("/spec/idleImage"); // inline fields win
    expect(byPath["/metadata/labels/team"]).toBe("ml"); // template labels win, sync-source is not copied
    expect(byPath).not.toHaveProperty("/metadata/labels/agentbox.io~1sync-source");
    expect(byPath["/metadata/annotations"]).toEqual({
      note: "from template",
      "agentbox.navix.sh/template-name": "python",
      "agentbox.navix.sh/template-version": "v2",
      "agentbox.navix.sh/overrides": JSON.stringify({ idleImage: "idle:mine" }),
    });
    expect(res.response.warnings).toBeUndefined();
  });

  it("warns, and leaves the copy to the pool step, when the template is missing or unreadable", () => {
    const submitted = pool({ templateName: "gone" });
    delete (submitted.spec as Record<string, unknown>).template;
    for (const lookup of [{ template: null }, { error: "template read timed out after 3000 ms" }]) {
      const res = mutateRequest(request("CREATE", submitted, undefined, "SandboxPool"), lookup);
      expect(res.response.allowed).toBe(true);
      expect(JSON.stringify(decode(res.response.patch))).not.toContain("template-name");
      expect(res.response.warnings?.[0]).toMatch(/SandboxTemplate "gone" (does not exist|could not be read)/);
    }
  });

  it("never copies into an Env member: its Env renders it", () => {
    const owned = pool(
      { templateName: "python" },
      { ownerReferences: [{ apiVersion: `${GROUP}/v1alpha1`, kind: "SandboxEnv", name: "e", uid: "u1" }] },
    );
    const res = mutateRequest(request("CREATE", owned, undefined, "SandboxPool"), {
      template: template({}) as never,
    });
    expect(JSON.stringify(decode(res.response.patch))).not.toContain("template-name");
  });

  it("changes nothing on an already defaulted object and leaves invalid ones to validation", () => {
    const full = pool({ podCreationImagePolicy: "PoolDefaultImage" });
    expect(mutateRequest(request("CREATE", full, undefined, "SandboxPool")).response).toEqual({
      uid: "u",
      allowed: true,
    });
    expect(
      mutateRequest(request("CREATE", pool({ replicas: -1 }), undefined, "SandboxPool")).response,
    ).toEqual({ uid: "u", allowed: true });
  });
});

describe("missingFieldPatch", () => {
  it("escapes JSON pointer tokens and never replaces present values", () => {
    expect(missingFieldPatch({ a: { "x/y": 1 } }, { a: { "x/y": 2, "m~n": 3 }, b: [1] })).toEqual([
      { op: "add", path: "/a/m~0n", value: 3 },
      { op: "add", path: "/b", value: [1] },
    ]);
  });
});

describe("parseAdmissionReview", () => {
  it("names missing and wrong fields", () => {
    const res = parseAdmissionReview({
      apiVersion: "admission.k8s.io/v1beta1",
      kind: "AdmissionReview",
      request: { kind: {} },
    });
    expect(res.ok).toBe(false);
    if (!res.ok) {
      const p = res.issues.map((i) => i.path);
      expect(p).toEqual(
        expect.arrayContaining(["apiVersion", "request.uid", "request.kind.group", "request.operation"]),
      );
    }
  });
});
