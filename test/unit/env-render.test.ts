import { describe, expect, it } from "vitest";
import {
  ENV_LABEL,
  MANAGED_ANNOTATION_KEYS_ANNOTATION,
  MANAGED_LABEL_KEYS_ANNOTATION,
  POOL_TEMPLATE_NAME_ANNOTATION,
  POOL_TEMPLATE_VERSION_ANNOTATION,
  SCALING_GROUP_LABEL,
} from "../../lib/crd/keys.ts";
import type { EnvClusterMember, SandboxEnv } from "../../lib/crd/sandbox-env.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import type { SandboxTemplate } from "../../lib/crd/sandbox-template.ts";
import { memberDrift } from "../../lib/env/member-drift.ts";
import { renderMember } from "../../lib/env/render-member.ts";

// Rendering a member pool from its Env, and comparing a live pool with the render, on plain data.

const pod = (image: string, extra: Record<string, unknown> = {}) => ({
  spec: { containers: [{ name: "main", image, resources: { requests: { cpu: "1" } } }], ...extra },
});

const TEMPLATE: SandboxTemplate = {
  metadata: {
    name: "python",
    labels: { tier: "gold" },
    annotations: { "agentbox.navix.sh/docs": "#", note: "t" },
  },
  spec: {
    version: "v1",
    template: pod("python:3.12"),
    idleImage: "idle:1",
    runtimes: [{ name: "e2b", protocol: "TCP" }],
  },
};

function env(spec: Partial<SandboxEnv["spec"]> = {}): SandboxEnv {
  return {
    metadata: { name: "py", namespace: "ns", uid: "env-uid", resourceVersion: "3", generation: 2 },
    spec: { templateRef: { name: "python" }, mode: "WarmPool", ...spec },
  };
}

const member = (m: Partial<EnvClusterMember> = {}): EnvClusterMember => ({
  name: "py-small",
  config: { scalingGroup: "default", labels: { team: "ml" }, annotations: { cost: "c1" } },
  ...m,
});

describe("renderMember from the Env's template", () => {
  it("applies the Env overrides and the member config, and stamps the Env's labels and records", () => {
    const r = renderMember(
      env({
        overrides: {
          image: "python:3.13",
          podCreationImagePolicy: "PoolDefaultImage",
          defaultIdleTimeout: "15m",
          defaultStartupTimeout: "2m",
        },
      }),
      member({
        config: { scalingGroup: "default", inlineResources: { limits: { cpu: "2" } }, minReplicas: 1 },
      }),
      { template: TEMPLATE, pullSecret: true },
    );
    expect(r.complete).toBe(true);
    expect(r.spec).toEqual({
      replicas: 1,
      templateName: "python",
      podCreationImagePolicy: "PoolDefaultImage",
      defaultStartupTimeout: "2m",
      defaultIdleTimeout: "15m",
      template: {
        spec: {
          containers: [{ name: "main", image: "python:3.13", resources: { limits: { cpu: "2" } } }],
          imagePullSecrets: [{ name: "ips-py" }],
        },
      },
      idleImage: "idle:1",
      runtimes: [{ name: "e2b", protocol: "TCP" }],
    });
    expect(r.labels).toEqual({ tier: "gold", [ENV_LABEL]: "py", [SCALING_GROUP_LABEL]: "default" });
    expect(r.annotations).toMatchObject({
      note: "t",
      [POOL_TEMPLATE_NAME_ANNOTATION]: "python",
      [POOL_TEMPLATE_VERSION_ANNOTATION]: "v1",
      [MANAGED_LABEL_KEYS_ANNOTATION]: '["tier"]',
      [MANAGED_ANNOTATION_KEYS_ANNOTATION]: '["note"]',
    });
    // The template itself is never changed by a render.
    expect(TEMPLATE.spec.template).toEqual(pod("python:3.12"));
  });

  it("lets member config labels win over template labels; a member without config has no group", () => {
    const withConfig = renderMember(
      env(),
      member({ config: { scalingGroup: "g", labels: { tier: "mine" } } }),
      {
        template: TEMPLATE,
        pullSecret: false,
      },
    );
    expect(withConfig.labels.tier).toBe("mine");
    const bare = renderMember(env(), { name: "m" }, { template: TEMPLATE, pullSecret: false });
    expect(bare.labels).not.toHaveProperty(SCALING_GROUP_LABEL);
    expect(bare.spec.replicas).toBe(0);
  });

  it("renders replicas from member.spec.replicas without taking the spec as a snapshot", () => {
    const r = renderMember(env(), member({ spec: { replicas: 4, podCreationImagePolicy: "IdleImage" } }), {
      template: TEMPLATE,
      pullSecret: false,
    });
    expect(r.spec.replicas).toBe(4);
    expect(r.spec.template).toEqual(pod("python:3.12"));
  });

  it("is incomplete without the template, or with it at another version than the Env pins", () => {
    const missing = renderMember(env(), member(), { template: null, pullSecret: false });
    expect(missing).toMatchObject({ complete: false, problem: 'SandboxTemplate "python" does not exist' });
    expect(missing.owned).not.toContain("template");
    expect(missing.owned).toContain("replicas");
    const pinned = renderMember(env({ templateRef: { name: "python", version: "v0" } }), member(), {
      template: TEMPLATE,
      pullSecret: false,
    });
    expect(pinned.complete).toBe(false);
    expect(pinned.problem).toMatch(/is at version "v1", the Env pins "v0"/);
  });
});

describe("renderMember from a spec snapshot", () => {
  it("stamps the snapshot verbatim (no Env overrides) with its metadata and the Env's labels", () => {
    const snapshot = {
      replicas: 3,
      templateName: "legacy",
      podCreationImagePolicy: "IdleImage" as const,
      template: pod("legacy:1"),
    };
    const r = renderMember(
      env({ overrides: { image: "python:3.13" } }),
      member({ spec: snapshot, metadata: { labels: { a: "1" } }, config: { scalingGroup: "" } }),
      { template: null, pullSecret: false },
    );
    expect(r.complete).toBe(true);
    expect(r.spec).toEqual(snapshot);
    expect(r.labels).toEqual({ a: "1", [ENV_LABEL]: "py" });
  });
});

describe("memberDrift", () => {
  const rendered = renderMember(
    env(),
    member({ spec: { replicas: 2, podCreationImagePolicy: "IdleImage" } }),
    {
      template: TEMPLATE,
      pullSecret: false,
    },
  );
  const live = (change: (p: SandboxPool) => void = () => {}): SandboxPool => {
    const p: SandboxPool = structuredClone({
      metadata: {
        name: "py-small",
        resourceVersion: "9",
        labels: { ...rendered.labels, other: "kept" },
        annotations: { ...rendered.annotations, "kubectl.kubernetes.io/last-applied-configuration": "{}" },
      },
      spec: rendered.spec as SandboxPool["spec"],
    });
    change(p);
    return p;
  };

  it("finds none when the pool is the render, whatever else it carries", () => {
    expect(memberDrift(live(), rendered)).toEqual({ ops: [], changed: [] });
  });

  it("patches back an edited replica count and template, naming what changed", () => {
    const drift = memberDrift(
      live((p) => {
        p.spec.replicas = 9;
        p.spec.template = pod("hacked:1");
      }),
      rendered,
    );
    expect(drift.replicas).toEqual({ live: 9, wanted: 2 });
    expect(drift.changed).toEqual(["spec.replicas", "spec.template"]);
    expect(drift.ops).toEqual([
      { op: "add", path: "/spec/replicas", value: 2 },
      { op: "add", path: "/spec/template", value: pod("python:3.12") },
    ]);
  });

  it("removes a label it stamped before and renders no more, never anyone else's", () => {
    const drift = memberDrift(
      live((p) => {
        p.metadata = {
          ...p.metadata,
          labels: { ...p.metadata?.labels, dropped: "x" },
          annotations: { ...p.metadata?.annotations, [MANAGED_LABEL_KEYS_ANNOTATION]: '["dropped","tier"]' },
        };
      }),
      rendered,
    );
    expect(drift.ops).toContainEqual({ op: "remove", path: "/metadata/labels/dropped" });
    expect(drift.ops).not.toContainEqual({ op: "remove", path: "/metadata/labels/other" });
  });

  it("removes the scaling-group label once the member leaves its group", () => {
    const ungrouped = renderMember(
      env(),
      member({
        spec: { replicas: 2, podCreationImagePolicy: "IdleImage" },
        config: { scalingGroup: "", labels: { team: "ml" } },
      }),
      { template: TEMPLATE, pullSecret: false },
    );
    expect(memberDrift(live(), ungrouped).ops).toContainEqual({
      op: "remove",
      path: "/metadata/labels/agentbox.navix.sh~1scaling-group",
    });
  });

  it("leaves the template fields and stamped keys alone when the render is incomplete", () => {
    const incomplete = renderMember(
      env(),
      member({ spec: { replicas: 2, podCreationImagePolicy: "IdleImage" } }),
      {
        template: null,
        pullSecret: false,
      },
    );
    const drift = memberDrift(
      live((p) => {
        p.spec.template = pod("elsewhere:1");
        p.metadata = { ...p.metadata, labels: { ...p.metadata?.labels, tier: "x" } };
      }),
      incomplete,
    );
    expect(drift.ops).toEqual([]);
  });
});
