import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kube, newNamespace } from "./support/kube.ts";
import { type Obj, Samples } from "./support/samples.ts";

// A table of invalid objects, each a valid sample with one change: the apiserver (OpenAPI, CEL,
// list-map keys) or our validating webhook must refuse it with a message naming the field.

const { custom, core } = kube();

let samples: Samples;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const created = await newNamespace(core, "invalid");
  cleanup = created.cleanup;
  samples = new Samples(custom, created.ns);
});
afterAll(async () => {
  await samples.cleanup();
  await cleanup();
});

/** Each invalid object: a valid sample, one change, and the field path the error must name. */
const INVALID: {
  name: string;
  kind: "SandboxPool" | "SandboxEnv" | "SandboxTemplate";
  change: (o: Obj) => void;
  field: string;
  says?: string;
}[] = [
  {
    name: "negative replicas",
    kind: "SandboxPool",
    change: (o) => {
      o.spec!.replicas = -1;
    },
    field: "spec.replicas",
  },
  {
    name: "missing replicas",
    kind: "SandboxPool",
    change: (o) => {
      delete o.spec!.replicas;
    },
    field: "spec.replicas",
  },
  {
    name: "unknown podCreationImagePolicy",
    kind: "SandboxPool",
    change: (o) => {
      o.spec!.podCreationImagePolicy = "Latest";
    },
    field: "spec.podCreationImagePolicy",
  },
  {
    name: "runtime protocol not TCP/UDP/SCTP",
    kind: "SandboxPool",
    change: (o) => {
      o.spec!.runtimes = [{ name: "e2b", protocol: "HTTP" }];
    },
    field: "spec.runtimes[0].protocol",
  },
  {
    name: "runtime port out of range",
    kind: "SandboxPool",
    change: (o) => {
      o.spec!.runtimes = [{ name: "e2b", port: 70000 }];
    },
    field: "spec.runtimes[0].port",
  },
  {
    name: "duplicate runtime names (list-map key)",
    kind: "SandboxPool",
    change: (o) => {
      o.spec!.runtimes = [{ name: "e2b" }, { name: "e2b" }];
    },
    field: "spec.runtimes[1]",
  },
  {
    name: "duration that is not a Go duration",
    kind: "SandboxPool",
    change: (o) => {
      o.spec!.defaultStartupTimeout = "soon";
    },
    field: "spec.defaultStartupTimeout",
  },
  {
    name: "pod template without containers",
    kind: "SandboxPool",
    change: (o) => {
      delete o.spec!.templateName;
      o.spec!.template = { spec: { containers: [] } };
    },
    field: "spec.template.spec.containers",
  },
  {
    name: "Aggressive without maxReplicas (CEL)",
    kind: "SandboxEnv",
    change: (o) => {
      delete envGroup(o).maxReplicas;
    },
    field: "spec.autoscaling.groups[0]",
    says: "Aggressive scaleUpPolicy.mode requires maxReplicas",
  },
  {
    name: "defaults multiplier < 1",
    kind: "SandboxEnv",
    change: (o) => {
      o.spec!.defaults = { instanceType: "small", multiplier: 0 };
    },
    field: "spec.defaults.multiplier",
  },
  {
    name: "unknown mode",
    kind: "SandboxEnv",
    change: (o) => {
      o.spec!.mode = "Serverless";
    },
    field: "spec.mode",
  },
  {
    name: "mode OnDemandJob (not served yet)",
    kind: "SandboxEnv",
    change: (o) => {
      o.spec!.mode = "OnDemandJob";
    },
    field: "spec.mode",
    says: "not served yet",
  },
  {
    name: "negative idleTimeoutSeconds",
    kind: "SandboxEnv",
    change: (o) => {
      envGroup(o).scaleDownPolicy = { idleTimeoutSeconds: -5 };
    },
    field: "spec.autoscaling.groups[0].scaleDownPolicy.idleTimeoutSeconds",
  },
  {
    name: "unknown scaleUpPolicy mode",
    kind: "SandboxEnv",
    change: (o) => {
      envGroup(o).scaleUpPolicy = { mode: "Turbo" };
    },
    field: "spec.autoscaling.groups[0].scaleUpPolicy.mode",
  },
  {
    name: "duplicate clusterID (list-map key)",
    kind: "SandboxEnv",
    change: (o) => {
      o.spec!.clusters = [{ clusterID: "local" }, { clusterID: "local" }];
    },
    field: "spec.clusters[1]",
  },
  {
    name: "group matching no member's scalingGroup",
    kind: "SandboxEnv",
    change: (o) => {
      envGroup(o).name = "gpu";
    },
    field: "spec.autoscaling.groups[0].name",
    says: 'group "gpu" matches no member',
  },
  {
    name: "member names repeated across clusters",
    kind: "SandboxEnv",
    change: (o) => {
      (o.spec!.clusters as unknown[]).push({ clusterID: "remote", members: [{ name: "python-small" }] });
    },
    field: "spec.clusters[1].members[0].name",
    says: "duplicate member name",
  },
  {
    name: "instanceType without multiplier",
    kind: "SandboxEnv",
    change: (o) => {
      delete envMember(o).config.multiplier;
    },
    field: "spec.clusters[0].members[0].config.multiplier",
  },
  {
    name: "member minReplicas above maxReplicas",
    kind: "SandboxEnv",
    change: (o) => {
      envMember(o).config.minReplicas = 30;
    },
    field: "spec.clusters[0].members[0].config.minReplicas",
  },
  {
    name: "missing templateRef",
    kind: "SandboxEnv",
    change: (o) => {
      delete o.spec!.templateRef;
    },
    field: "spec.templateRef",
  },
  {
    name: "visibility rule naming a blank user",
    kind: "SandboxTemplate",
    change: (o) => {
      o.spec!.visibility = { rules: [{ team: "research" }, { users: ["alice", " "] }] };
    },
    field: "spec.visibility.rules[1].users[1]",
  },
  {
    name: "runtime port as a string",
    kind: "SandboxTemplate",
    change: (o) => {
      o.spec!.runtimes = [{ name: "e2b", port: "envd" }];
    },
    field: "spec.runtimes[0].port",
  },
  {
    name: "pod template on the node's network",
    kind: "SandboxTemplate",
    change: (o) => {
      podSpec(o).hostNetwork = true;
    },
    field: "spec.template.spec.hostNetwork",
  },
  {
    name: "pod template on the node's network",
    kind: "SandboxPool",
    change: (o) => {
      podSpec(o).hostNetwork = true;
    },
    field: "spec.template.spec.hostNetwork",
  },
  {
    name: "sandbox containers naming no container",
    kind: "SandboxTemplate",
    change: (o) => {
      podTemplate(o).metadata = { annotations: { "agentbox.navix.sh/sandbox-containers": "sidecar" } };
    },
    field: "spec.template.metadata.annotations[agentbox.navix.sh/sandbox-containers]",
    says: '"sidecar" is no container of the template',
  },
  {
    name: "tenant images naming a tag",
    kind: "SandboxPool",
    change: (o) => {
      podTemplate(o).metadata = { annotations: { "agentbox.navix.sh/tenant-images": "python:3" } };
    },
    field: "spec.template.metadata.annotations[agentbox.navix.sh/tenant-images]",
    says: "names a tag or digest",
  },
];

function podTemplate(o: Obj): Record<string, unknown> {
  return o.spec!.template as Record<string, unknown>;
}
function podSpec(o: Obj): Record<string, unknown> {
  return podTemplate(o).spec as Record<string, unknown>;
}
function envGroup(o: Obj): Record<string, unknown> {
  return (o.spec!.autoscaling as { groups: Record<string, unknown>[] }).groups[0]!;
}
function envMember(o: Obj): { config: Record<string, unknown> } {
  return (o.spec!.clusters as { members: { config: Record<string, unknown> }[] }[])[0]!.members[0]!;
}

describe("invalid objects are rejected with a message naming the field", () => {
  it.each(INVALID)("$kind: $name → $field", async ({ kind, change, field, says }) => {
    const obj = structuredClone(samples.byKind()[kind]!);
    obj.metadata = { ...obj.metadata, name: `bad-${randomBytes(3).toString("hex")}` };
    change(obj);
    const { code, message } = await samples.rejection(obj);
    expect(code).toBeGreaterThanOrEqual(400);
    expect(code).toBeLessThan(500);
    expect(message).toContain(field);
    if (says) expect(message).toContain(says);
  });
});
