import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { KubernetesObject } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readYamlObjects, samplesDir } from "../../infra/cluster/install.ts";
import { httpsRequest } from "./support/http.ts";
import { kube, newNamespace } from "./support/kube.ts";

// The agents.navix.sh CRDs (generated from the valibot schemas) and our admission webhooks,
// installed in the real apiserver by the global setup.

const { custom, crds, core, cluster } = kube();
const GROUP = "agents.navix.sh";
const VERSION = "v1alpha1";
let ns: string;
let cleanup: () => Promise<void>;
const suffix = randomBytes(3).toString("hex");
const templateName = `python-${suffix}`;

type Obj = KubernetesObject & { spec?: Record<string, unknown>; status?: Record<string, unknown> };

/** samples returns infra/samples retargeted at this test's namespace and a unique template name. */
function samples(): Record<string, Obj> {
  const out: Record<string, Obj> = {};
  for (const o of readYamlObjects(samplesDir) as Obj[]) {
    if (o.kind === "Namespace") continue;
    const copy = structuredClone(o);
    if (copy.kind === "SandboxTemplate") copy.metadata!.name = templateName;
    else copy.metadata!.namespace = ns;
    if (copy.kind === "SandboxPool") copy.spec!.templateName = templateName;
    if (copy.kind === "SandboxEnv") (copy.spec!.templateRef as { name: string }).name = templateName;
    out[copy.kind!] = copy;
  }
  return out;
}

const plural = (kind: string) => `${kind.toLowerCase()}s`;

async function create(obj: Obj): Promise<Obj> {
  if (obj.kind === "SandboxTemplate") {
    return (await custom.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: plural(obj.kind),
      body: obj,
    })) as Obj;
  }
  return (await custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: ns,
    plural: plural(obj.kind!),
    body: obj,
  })) as Obj;
}

/** rejection returns the apiserver's error (status code and message) for a create expected to fail. */
async function rejection(obj: Obj): Promise<{ code: number; message: string }> {
  try {
    await create(obj);
  } catch (e) {
    const err = e as { code?: number; body?: string };
    const body = JSON.parse(err.body ?? "{}") as { message?: string };
    return { code: err.code ?? 0, message: body.message ?? String(e) };
  }
  throw new Error(`expected ${obj.kind} ${obj.metadata?.name} to be rejected, but it was created`);
}

beforeAll(async () => {
  ({ ns, cleanup } = await newNamespace(core, "crd"));
});
afterAll(async () => {
  await custom
    .deleteClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: "sandboxtemplates",
      name: templateName,
    })
    .catch(() => {});
  await cleanup();
});

describe("CRDs", () => {
  it("are installed with names, short names, scope and subresources", async () => {
    const byName = async (name: string) => crds.readCustomResourceDefinition({ name });
    const pool = await byName("sandboxpools.agents.navix.sh");
    expect(pool.spec.scope).toBe("Namespaced");
    expect(pool.spec.names.shortNames).toEqual(["sbp"]);
    const v = pool.spec.versions[0]!;
    expect(v.subresources?.status).toEqual({});
    expect(v.subresources?.scale).toEqual({
      specReplicasPath: ".spec.replicas",
      statusReplicasPath: ".status.runningReplicas",
      labelSelectorPath: ".status.selector",
    });
    expect((await byName("sandboxenvs.agents.navix.sh")).spec.names.shortNames).toEqual(["sbe"]);
    const tmpl = await byName("sandboxtemplates.agents.navix.sh");
    expect(tmpl.spec.scope).toBe("Cluster");
    expect(tmpl.spec.names.shortNames).toEqual(["sbt"]);
  });

  it("accept the samples and return them with the server-applied defaults", async () => {
    const s = samples();
    const template = await create(s.SandboxTemplate!);
    const runtimes = template.spec!.runtimes as { protocol?: string }[];
    expect(runtimes[0]!.protocol).toBe("TCP");

    const pool = await create(s.SandboxPool!);
    expect(pool.spec!.podCreationImagePolicy).toBe("IdleImage");
    expect((pool.spec!.runtimes as { protocol?: string }[])[0]!.protocol).toBe("TCP");
    // Defaulted by our mutating webhook: the pool records the template it came from.
    expect(pool.metadata?.annotations?.["agentbox.navix.sh/template-name"]).toBe(templateName);

    const env = await create(s.SandboxEnv!);
    expect(env.spec!.mode).toBe("WarmPool");
    const clusters = env.spec!.clusters as { members: { config: { scalingGroup?: string } }[] }[];
    expect(clusters[0]!.members[0]!.config.scalingGroup).toBe("default");
    const group = (env.spec!.autoscaling as { groups: Record<string, Record<string, unknown>>[] }).groups[0]!;
    expect(group.scaleUpPolicy).toEqual({
      mode: "Aggressive",
      cooldownSeconds: 30,
      idleThresholdSeconds: 30,
      idleZeroQuietWindowSeconds: 300,
      saturationCooldownSeconds: 60,
    });
    expect(group.scaleDownPolicy).toEqual({
      idleTimeoutSeconds: 300,
      stabilizationSeconds: 60,
      protectionWindowSeconds: 10,
    });
  });

  it("show the printer columns in server-side tables (what kubectl get prints)", async () => {
    const table = async (path: string) => {
      const res = await httpsRequest(`${cluster.server}${path}`, cluster.caCert, {
        headers: {
          authorization: `Bearer ${cluster.adminToken}`,
          accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
        },
      });
      expect(res.status).toBe(200);
      const t = JSON.parse(res.body) as {
        columnDefinitions: { name: string }[];
        rows: { cells: unknown[] }[];
      };
      return { columns: t.columnDefinitions.map((c) => c.name), rows: t.rows };
    };
    const pools = await table(`/apis/${GROUP}/${VERSION}/namespaces/${ns}/sandboxpools`);
    expect(pools.columns).toEqual(["Name", "Phase", "Desired", "Idle", "Running", "Age"]);
    expect(pools.rows[0]!.cells[0]).toBe("python");
    expect(pools.rows[0]!.cells[2]).toBe(3);
    const envs = await table(`/apis/${GROUP}/${VERSION}/namespaces/${ns}/sandboxenvs`);
    expect(envs.columns).toEqual(["Name", "Members", "Desired", "Running", "Idle", "Age"]);
    const templates = await table(`/apis/${GROUP}/${VERSION}/sandboxtemplates/${templateName}`);
    expect(templates.columns).toEqual(["Name", "Version", "Age"]);
    expect(templates.rows[0]!.cells[1]).toBe("v1.0.0");
  });

  it("serve the scale subresource on SandboxPool (kubectl scale, HPA)", async () => {
    const base = `/apis/${GROUP}/${VERSION}/namespaces/${ns}/sandboxpools/python`;
    const headers = {
      authorization: `Bearer ${cluster.adminToken}`,
      "content-type": "application/merge-patch+json",
    };
    const status = await httpsRequest(`${cluster.server}${base}/status`, cluster.caCert, {
      method: "PATCH",
      headers,
      body: JSON.stringify({
        status: { runningReplicas: 2, selector: "agentbox.navix.sh/sandbox-pool=python" },
      }),
    });
    expect(status.status).toBe(200);
    const scaled = await httpsRequest(`${cluster.server}${base}/scale`, cluster.caCert, {
      method: "PATCH",
      headers,
      body: JSON.stringify({ spec: { replicas: 7 } }),
    });
    expect(scaled.status).toBe(200);
    const scale = JSON.parse(scaled.body) as {
      kind: string;
      spec: { replicas: number };
      status: { replicas: number; selector: string };
    };
    expect(scale.kind).toBe("Scale");
    expect(scale.spec.replicas).toBe(7);
    expect(scale.status).toEqual({ replicas: 2, selector: "agentbox.navix.sh/sandbox-pool=python" });
    const pool = (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: "sandboxpools",
      name: "python",
    })) as Obj;
    expect(pool.spec!.replicas).toBe(7);
  });
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
    name: "visibility rule matching everyone",
    kind: "SandboxTemplate",
    change: (o) => {
      o.spec!.visibility = { rules: [{ team: "research" }, {}] };
    },
    field: "spec.visibility.rules[1]",
  },
  {
    name: "runtime port as a string",
    kind: "SandboxTemplate",
    change: (o) => {
      o.spec!.runtimes = [{ name: "e2b", port: "envd" }];
    },
    field: "spec.runtimes[0].port",
  },
];

function envGroup(o: Obj): Record<string, unknown> {
  return (o.spec!.autoscaling as { groups: Record<string, unknown>[] }).groups[0]!;
}
function envMember(o: Obj): { config: Record<string, unknown> } {
  return (o.spec!.clusters as { members: { config: Record<string, unknown> }[] }[])[0]!.members[0]!;
}

describe("invalid objects are rejected with a message naming the field", () => {
  it.each(INVALID)("$kind: $name → $field", async ({ kind, change, field, says }) => {
    const obj = structuredClone(samples()[kind]!);
    obj.metadata = { ...obj.metadata, name: `bad-${randomBytes(3).toString("hex")}` };
    change(obj);
    const { code, message } = await rejection(obj);
    expect(code).toBeGreaterThanOrEqual(400);
    expect(code).toBeLessThan(500);
    expect(message).toContain(field);
    if (says) expect(message).toContain(says);
  });
});

describe("admission webhook endpoints", () => {
  const url = (path: string) => `https://127.0.0.1:${cluster.hostPort}/admission/${path}`;
  const auth = () => ({
    authorization: `Bearer ${cluster.callbackToken}`,
    "content-type": "application/json",
  });
  const review = (object: unknown) =>
    JSON.stringify({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: {
        uid: "u-1",
        kind: { group: GROUP, version: VERSION, kind: "SandboxEnv" },
        operation: "CREATE",
        object,
      },
    });

  it.each([
    ["not JSON", "hello"],
    ["truncated JSON", review(samples().SandboxEnv).slice(0, 60)],
    ["an empty body", ""],
    ["a JSON array", "[1,2]"],
    ["the wrong apiVersion", review({}).replace("admission.k8s.io/v1", "admission.k8s.io/v1beta1")],
    [
      "no request.uid",
      JSON.stringify({
        apiVersion: "admission.k8s.io/v1",
        kind: "AdmissionReview",
        request: { kind: { group: GROUP, version: VERSION, kind: "SandboxEnv" }, operation: "CREATE" },
      }),
    ],
  ])("answer 400 to %s, never crash", async (_what, body) => {
    for (const path of ["validate", "mutate"]) {
      const res = await httpsRequest(url(path), cluster.caCert, { method: "POST", headers: auth(), body });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body).error.code).toBe("BadRequest");
    }
    const health = await httpsRequest(`https://127.0.0.1:${cluster.hostPort}/healthz`, cluster.caCert);
    expect(health.status).toBe(200);
  });

  it("names the missing field of a malformed review", async () => {
    const body = JSON.stringify({
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: { kind: { group: GROUP, version: VERSION, kind: "SandboxEnv" }, operation: "CREATE" },
    });
    const res = await httpsRequest(url("validate"), cluster.caCert, {
      method: "POST",
      headers: auth(),
      body,
    });
    expect(JSON.parse(res.body).error.fields.map((f: { path: string }) => f.path)).toContain("request.uid");
  });

  it("refuse callers without the apiserver's token (401)", async () => {
    const body = review(samples().SandboxEnv);
    const none = await httpsRequest(url("validate"), cluster.caCert, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    expect(none.status).toBe(401);
    const wrong = await httpsRequest(url("validate"), cluster.caCert, {
      method: "POST",
      headers: { ...auth(), authorization: "Bearer nope" },
      body,
    });
    expect(wrong.status).toBe(401);
  });

  it("refuse bodies over the size limit (413)", async () => {
    const res = await httpsRequest(url("validate"), cluster.caCert, {
      method: "POST",
      headers: auth(),
      body: Buffer.alloc(8 * 1024 * 1024, 0x20),
    });
    expect(res.status).toBe(413);
  });

  it("answer a well-formed review with a decision (allowed, and denied with reasons)", async () => {
    const ok = await httpsRequest(url("validate"), cluster.caCert, {
      method: "POST",
      headers: auth(),
      body: review(samples().SandboxEnv),
    });
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body).response).toEqual({ uid: "u-1", allowed: true });
    const bad = structuredClone(samples().SandboxEnv!);
    bad.spec!.mode = "OnDemandJob";
    const denied = await httpsRequest(url("validate"), cluster.caCert, {
      method: "POST",
      headers: auth(),
      body: review(bad),
    });
    const response = JSON.parse(denied.body).response;
    expect(response.allowed).toBe(false);
    expect(response.status.message).toContain("spec.mode");
  });
});

void join;
