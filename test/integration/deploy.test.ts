import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1ConfigMap, V1Deployment, V1Ingress, V1Service } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { readHostEnv } from "../../hosts/node/config.ts";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import { AUDIT_POLICY } from "../../infra/cluster/configs.ts";
import { checkSandboxDomain } from "../../lib/data-plane/sandbox-domain.ts";
import { kube } from "./support/kube.ts";

// infra/deploy, checked by the real apiserver: every object of the kustomize base goes through a
// server-side apply with dryRun=All (validation, defaulting, admission, RBAC escalation checks),
// as `kubectl apply -k infra/deploy --dry-run=server` would send it. The data plane examples
// (examples/data-plane/, not in the base) are dry-run where their kinds are built in; the
// Gateway API and cert-manager kinds are not installed here, so those are parsed and checked
// against the base (the Service they send to, one domain, one certificate Secret).

const DEPLOY = "infra/deploy";
const EXAMPLES = join(DEPLOY, "examples/data-plane");
/** DATA_PLANE_SERVICE is the base's Service in front of the router's plain listener. */
const DATA_PLANE_SERVICE = "agentbox-data-plane";
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

/** EXAMPLE_PLURALS adds the built-in kinds of the examples, which the apiserver can dry-run. */
const EXAMPLE_PLURALS: Record<string, string> = {
  ...PLURALS,
  Ingress: "ingresses",
  NetworkPolicy: "networkpolicies",
};

const pathOf = (m: Manifest) => {
  const plural = EXAMPLE_PLURALS[m.kind];
  if (!plural) throw new Error(`the test knows no path for kind ${m.kind}: add it to PLURALS`);
  const group = m.apiVersion === "v1" ? "/api/v1" : `/apis/${m.apiVersion}`;
  const ns = m.metadata.namespace ? `/namespaces/${m.metadata.namespace}` : "";
  return `${group}${ns}/${plural}/${m.metadata.name}`;
};

/** manifests are a YAML file's objects, in order; a document that does not parse fails the test. */
function manifests(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(file, "utf8")).map((d) => {
    expect(
      d.errors.map((e) => e.message),
      file,
    ).toEqual([]);
    return d.toJS() as Manifest;
  });
}

/** base is every object the kustomization's resources hold, in order. */
function base(): Manifest[] {
  const kustomization = parse(readFileSync(join(DEPLOY, "kustomization.yaml"), "utf8")) as {
    resources: string[];
  };
  return kustomization.resources.flatMap((file) => manifests(join(DEPLOY, file)));
}

/** examples are the objects of examples/data-plane/, every file. */
function examples(): Manifest[] {
  return readdirSync(EXAMPLES)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .flatMap((f) => manifests(join(EXAMPLES, f)));
}

/** one is the object of that kind and name in a list; the test fails when it is missing. */
function one<T>(objects: Manifest[], kind: string, name: string): T {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found as unknown as T;
}

/** dryRun sends each object as a server-side apply with dryRun=All; the answers that failed. */
async function dryRun(objects: Manifest[]) {
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
  return answers.filter((a) => a.status !== 200 && a.status !== 201);
}

/** hostContainer is the host's Deployment's container and the ports it names. */
function hostContainer(objects: Manifest[]) {
  const deployment = one<V1Deployment>(objects, "Deployment", "agentbox-functions");
  const pod = deployment.spec?.template;
  const container = pod?.spec?.containers.find((c) => c.name === "host");
  if (!container) throw new Error("the Deployment has no container named host");
  const ports = new Map((container.ports ?? []).map((p) => [p.name ?? "", p.containerPort]));
  return { labels: pod?.metadata?.labels ?? {}, container, ports };
}

/**
 * hostEnv is the environment the host's container starts with: its ConfigMaps, then its own env;
 * each *_FILE names a temporary file holding a fresh secret, as the mounted Secrets would.
 */
function hostEnv(objects: Manifest[], dir: string): Record<string, string> {
  const { container } = hostContainer(objects);
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    const name = from.configMapRef?.name ?? "";
    Object.assign(env, one<V1ConfigMap>(objects, "ConfigMap", name).data);
  }
  for (const e of container.env ?? []) env[e.name] = e.value ?? "";
  for (const name of Object.keys(env).filter((n) => n.endsWith("_FILE"))) {
    env[name] = join(dir, name);
    writeFileSync(env[name], randomBytes(24).toString("hex"));
  }
  return env;
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
    expect(await dryRun(objects)).toEqual([]);
    // A dry run stores nothing: no webhook configuration of that name is there afterwards.
    const stored = await send({
      method: "GET",
      path: "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/agentbox-functions",
    });
    expect(stored.status).toBe(404);
  });

  it("exposes the sandbox router: its listeners as container ports, its Service on the plain one", () => {
    const objects = base();
    const { labels, ports } = hostContainer(objects);
    expect([...ports.keys()]).toEqual(expect.arrayContaining(["https", "data-plane", "data-plane-tls"]));
    const service = one<V1Service>(objects, "Service", DATA_PLANE_SERVICE);
    // The selector picks the host's pods, and the Service's one port reaches the plain listener.
    expect(Object.entries(service.spec?.selector ?? {}).length).toBeGreaterThan(0);
    expect(labels).toMatchObject(service.spec?.selector ?? {});
    expect(
      service.spec?.ports?.map((p) => ({ name: p.name, port: p.port, targetPort: p.targetPort })),
    ).toEqual([{ name: "http", port: 80, targetPort: "data-plane" }]);
    // The monitoring overlay's ServiceMonitor scrapes the API's Service, never a router's.
    const monitor = manifests(join(DEPLOY, "overlays/monitoring/service-monitor.yaml"))[0] as unknown as {
      spec: { selector: { matchLabels: Record<string, string> } };
    };
    const routerServices = [service, one<V1Service>(examples(), "Service", "agentbox-data-plane-tls")];
    for (const s of routerServices)
      expect(s.metadata?.labels).not.toMatchObject(monitor.spec.selector.matchLabels);
    expect(one<V1Service>(objects, "Service", "agentbox-functions").metadata?.labels).toMatchObject(
      monitor.spec.selector.matchLabels,
    );
  });

  it("sets only variables the host reads, and they start the router on the container ports", () => {
    const objects = base();
    const { ports } = hostContainer(objects);
    const service = one<V1Service>(objects, "Service", DATA_PLANE_SERVICE);
    const dir = mkdtempSync(join(tmpdir(), "agentbox-deploy-env-"));
    try {
      const env = hostEnv(objects, dir);
      const read = readHostEnv(env);
      if (!read.ok) throw new Error(`the manifests' settings are refused: ${read.errors.join("; ")}`);
      expect(read.value.port).toBe(ports.get("https"));
      expect(read.value.dataPlane?.plainPort).toBe(ports.get("data-plane"));
      expect(read.value.dataPlane?.tlsPort).toBe(ports.get("data-plane-tls"));
      // In-cluster callers name the router by its Service: every such name routes by headers.
      const { name, namespace } = service.metadata ?? {};
      const serviceNames = [
        name,
        `${name}.${namespace}`,
        `${name}.${namespace}.svc`,
        `${name}.${namespace}.svc.cluster.local`,
      ];
      expect(read.value.dataPlane?.routerNames).toEqual(expect.arrayContaining(serviceNames));
      // Every variable set is one the host reads: another value changes what it reads (or is refused).
      for (const variable of Object.keys(env)) {
        const changed = readHostEnv({ ...env, [variable]: "%not-a-value%" });
        expect(changed, `${variable} changes nothing: the host does not read it`).not.toEqual(read);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("ships data plane examples that parse, dry-run where built in, and send to the base's Service", async () => {
    const objects = examples();
    for (const o of objects)
      expect(o, "an example object").toMatchObject({
        apiVersion: expect.any(String),
        kind: expect.any(String),
        metadata: { name: expect.any(String) },
      });
    await core.createNamespace({ body: { metadata: { name: "agentbox-system" } } }).catch(() => {});
    await core.createNamespace({ body: { metadata: { name: "sandboxes" } } }).catch(() => {});
    expect(await dryRun(objects.filter((o) => EXAMPLE_PLURALS[o.kind]))).toEqual([]);

    const baseObjects = base();
    const { ports } = hostContainer(baseObjects);
    const service = one<V1Service>(baseObjects, "Service", DATA_PLANE_SERVICE);
    const servicePorts = service.spec?.ports ?? [];
    // The Gateway's route and the Ingress send to the data plane Service, on a port it has.
    const route = one<{
      spec: { hostnames: string[]; rules: { backendRefs: { name: string; port: number }[] }[] };
    }>(objects, "HTTPRoute", "agentbox-sandboxes");
    for (const ref of route.spec.rules.flatMap((r) => r.backendRefs)) {
      expect(ref.name).toBe(DATA_PLANE_SERVICE);
      expect(servicePorts.map((p) => p.port)).toContain(ref.port);
    }
    const ingress = one<V1Ingress>(objects, "Ingress", "agentbox-sandboxes");
    for (const path of ingress.spec?.rules?.flatMap((r) => r.http?.paths ?? []) ?? []) {
      expect(path.backend.service?.name).toBe(DATA_PLANE_SERVICE);
      expect(servicePorts.map((p) => p.name)).toContain(path.backend.service?.port?.name);
    }
    // The load balancer passes TLS through to the router's own TLS listener.
    const lb = one<V1Service>(objects, "Service", "agentbox-data-plane-tls");
    expect(lb.spec?.ports?.map((p) => p.targetPort)).toEqual(["data-plane-tls"]);
    expect(ports.has("data-plane-tls")).toBe(true);
    // One wildcard domain everywhere, one the host accepts as AGENTBOX_SANDBOX_DOMAIN.
    const gateway = one<{
      spec: { listeners: { hostname: string; tls: { certificateRefs: { name: string }[] } }[] };
    }>(objects, "Gateway", "agentbox-sandboxes");
    const certificate = one<{ spec: { secretName: string; dnsNames: string[] } }>(
      objects,
      "Certificate",
      "agentbox-sandboxes",
    );
    const hostnames = new Set([
      ...route.spec.hostnames,
      ...gateway.spec.listeners.map((l) => l.hostname),
      ...(ingress.spec?.rules?.map((r) => r.host) ?? []),
      ...(ingress.spec?.tls?.flatMap((t) => t.hosts ?? []) ?? []),
      ...certificate.spec.dnsNames,
    ]);
    expect(hostnames.size).toBe(1);
    const [wildcard] = [...hostnames];
    expect(wildcard).toMatch(/^\*\./);
    expect(checkSandboxDomain(String(wildcard).slice(2))).toMatchObject({ ok: true });
    // The certificate's Secret is the one the Gateway and the Ingress terminate TLS with.
    const secrets = new Set([
      certificate.spec.secretName,
      ...gateway.spec.listeners.flatMap((l) => l.tls.certificateRefs.map((r) => r.name)),
      ...(ingress.spec?.tls?.map((t) => t.secretName) ?? []),
    ]);
    expect([...secrets]).toEqual([certificate.spec.secretName]);
  });

  it("ships the audit policy the local control plane runs", () => {
    const shipped = parse(readFileSync(join(DEPLOY, "apiserver/audit-policy.yaml"), "utf8"));
    expect(shipped).toEqual(AUDIT_POLICY);
  });
});
