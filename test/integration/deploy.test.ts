import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import { AUDIT_POLICY } from "../../infra/cluster/configs.ts";
import { kube } from "./support/kube.ts";

// infra/deploy, checked by the real apiserver: every object of the kustomize base goes through a
// server-side apply with dryRun=All (validation, defaulting, admission, RBAC escalation checks),
// as `kubectl apply -k infra/deploy --dry-run=server` would send it.

const DEPLOY = "infra/deploy";
const { kc, core } = kube();
const send = nodeKubeTransport(kc);

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}

/** PLURALS names the resources of the kinds the base holds (the apiserver's paths need them). */
const PLURALS: Record<string, string> = {
  Namespace: "namespaces",
  ServiceAccount: "serviceaccounts",
  ClusterRole: "clusterroles",
  ClusterRoleBinding: "clusterrolebindings",
  Role: "roles",
  RoleBinding: "rolebindings",
  ConfigMap: "configmaps",
  PersistentVolumeClaim: "persistentvolumeclaims",
  Deployment: "deployments",
  Service: "services",
  ValidatingWebhookConfiguration: "validatingwebhookconfigurations",
  MutatingWebhookConfiguration: "mutatingwebhookconfigurations",
};

const pathOf = (m: Manifest) => {
  const plural = PLURALS[m.kind];
  if (!plural) throw new Error(`the test knows no path for kind ${m.kind}: add it to PLURALS`);
  const group = m.apiVersion === "v1" ? "/api/v1" : `/apis/${m.apiVersion}`;
  const ns = m.metadata.namespace ? `/namespaces/${m.metadata.namespace}` : "";
  return `${group}${ns}/${plural}/${m.metadata.name}`;
};

/** base is every object the kustomization's resources hold, in order. */
function base(): Manifest[] {
  const kustomization = parse(readFileSync(join(DEPLOY, "kustomization.yaml"), "utf8")) as {
    resources: string[];
  };
  return kustomization.resources.flatMap((file) =>
    parseAllDocuments(readFileSync(join(DEPLOY, file), "utf8")).map((d) => d.toJS() as Manifest),
  );
}

describe("infra/deploy", () => {
  it("lists every manifest of the folder in its kustomization", () => {
    const kustomization = parse(readFileSync(join(DEPLOY, "kustomization.yaml"), "utf8")) as {
      resources: string[];
    };
    const files = readdirSync(DEPLOY).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml");
    expect([...kustomization.resources].sort()).toEqual(files.sort());
  });

  it("passes a server-side dry run of every object against the real apiserver", async () => {
    // The namespaced objects need their namespace to exist (a dry run of it creates nothing).
    await core.createNamespace({ body: { metadata: { name: "agentbox-system" } } }).catch(() => {});
    const objects = base();
    expect(objects.map((o) => o.kind)).toEqual(expect.arrayContaining(Object.keys(PLURALS)));
    const answers = [];
    for (const o of objects) {
      const res = await send({
        method: "PATCH",
        path: pathOf(o),
        query: { dryRun: "All", fieldManager: "agentbox-deploy-test", force: "true" },
        contentType: "application/apply-patch+yaml",
        body: o,
      });
      answers.push({
        object: `${o.kind}/${o.metadata.name}`,
        status: res.status,
        body: res.body.slice(0, 300),
      });
    }
    expect(answers.filter((a) => a.status !== 200 && a.status !== 201)).toEqual([]);
    // A dry run stores nothing: no webhook configuration of that name is there afterwards.
    const stored = await send({
      method: "GET",
      path: "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/agentbox-functions",
    });
    expect(stored.status).toBe(404);
  });

  it("ships the audit policy the local control plane runs", () => {
    const shipped = parse(readFileSync(join(DEPLOY, "apiserver/audit-policy.yaml"), "utf8"));
    expect(shipped).toEqual(AUDIT_POLICY);
  });
});
