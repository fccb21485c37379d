import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpsRequest } from "./support/http.ts";
import { kube, newNamespace } from "./support/kube.ts";
import { GROUP, type Obj, Samples, VERSION } from "./support/samples.ts";

// The agents.navix.sh CRDs (generated from the valibot schemas), installed in the real apiserver
// by the global setup, with our admission webhooks registered.

const { custom, crds, core, cluster } = kube();

let samples: Samples;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  const created = await newNamespace(core, "crd");
  cleanup = created.cleanup;
  samples = new Samples(custom, created.ns);
});
afterAll(async () => {
  await samples.cleanup();
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
    const s = samples.byKind();
    const template = await samples.create(s.SandboxTemplate!);
    const runtimes = template.spec!.runtimes as { protocol?: string }[];
    expect(runtimes[0]!.protocol).toBe("TCP");

    const pool = await samples.create(s.SandboxPool!);
    expect(pool.spec!.podCreationImagePolicy).toBe("IdleImage");
    expect((pool.spec!.runtimes as { protocol?: string }[])[0]!.protocol).toBe("TCP");
    // Defaulted by our mutating webhook: the pool records the template it came from.
    expect(pool.metadata?.annotations?.["agentbox.navix.sh/template-name"]).toBe(samples.templateName);

    const env = await samples.create(s.SandboxEnv!);
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
    const pools = await table(`/apis/${GROUP}/${VERSION}/namespaces/${samples.ns}/sandboxpools`);
    expect(pools.columns).toEqual([
      "Name",
      "Phase",
      "Desired",
      "Idle",
      "Running",
      "Updated",
      "Outdated",
      "Age",
    ]);
    expect(pools.rows[0]!.cells[0]).toBe("python");
    expect(pools.rows[0]!.cells[2]).toBe(3);
    const envs = await table(`/apis/${GROUP}/${VERSION}/namespaces/${samples.ns}/sandboxenvs`);
    expect(envs.columns).toEqual(["Name", "Members", "Desired", "Running", "Idle", "Age"]);
    const templates = await table(`/apis/${GROUP}/${VERSION}/sandboxtemplates/${samples.templateName}`);
    expect(templates.columns).toEqual(["Name", "Version", "Age"]);
    expect(templates.rows[0]!.cells[1]).toBe("v1.0.0");
  });

  it("serve the scale subresource on SandboxPool (kubectl scale, HPA)", async () => {
    const base = `/apis/${GROUP}/${VERSION}/namespaces/${samples.ns}/sandboxpools/python`;
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
      namespace: samples.ns,
      plural: "sandboxpools",
      name: "python",
    })) as Obj;
    expect(pool.spec!.replicas).toBe(7);
  });
});
