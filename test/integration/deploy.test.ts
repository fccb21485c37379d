import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { V1Ingress, V1Service } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { readHostEnv } from "../../hosts/node/config.ts";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import { AUDIT_POLICY } from "../../infra/cluster/configs.ts";
import { checkSandboxDomain } from "../../lib/data-plane/sandbox-domain.ts";
import {
  BASE,
  base,
  DEPLOY,
  dryRun,
  EXAMPLE_PLURALS,
  examples,
  hostContainer,
  hostSettings,
  one,
  overlays,
  PLURALS,
  sqlite,
  withHostEnv,
} from "./support/deploy-manifests.ts";
import { kube } from "./support/kube.ts";
import { kustomizationOf, kustomize, type Manifest, manifests } from "./support/kustomize.ts";

// infra/deploy, checked by the real apiserver: every object of the kustomize base (base/), and of
// its single-replica SQLite overlay, goes through a server-side apply with dryRun=All
// (validation, defaulting, admission, RBAC escalation checks), as `kubectl apply -k infra/deploy
// --dry-run=server` would send it; every overlay builds as kustomize builds it. What the base
// runs (replicas, shutdown, the PostgreSQL Secret) and what the overlay keeps: deploy-replicas.
// The data plane examples
// (examples/data-plane/, not in the base) are dry-run where their kinds are built in; the
// Gateway API and cert-manager kinds are not installed here, so those are parsed and checked
// against the base (the Service they send to, one domain, one certificate Secret).

/** DATA_PLANE_SERVICE is the base's Service in front of the router's plain listener. */
const DATA_PLANE_SERVICE = "agentbox-data-plane";
const { kc, core } = kube();
const send = nodeKubeTransport(kc);
/** SANDBOX_METRICS is the opt-in component of sandbox metrics' grant, and the overlay that applies it. */
const SANDBOX_METRICS = join(DEPLOY, "components/sandbox-metrics");
const sandboxMetrics = () => kustomize(join(DEPLOY, "overlays/sandbox-metrics"));
/** BUILDS are the installs whose objects and settings are checked alike. */
const BUILDS = [
  ["the base", base],
  ["the SQLite overlay", sqlite],
  ["the sandbox-metrics overlay", sandboxMetrics],
] as const;

describe("infra/deploy", () => {
  it("lists every manifest of each kustomization's folder in it", () => {
    // sandbox-namespace/: applied per sandbox namespace (network-policy.test.ts applies it).
    for (const dir of [DEPLOY, BASE, ...overlays(), SANDBOX_METRICS, join(DEPLOY, "sandbox-namespace")]) {
      const resources = kustomizationOf(dir).resources ?? [];
      const files = resources.filter((r) => !statSync(join(dir, r)).isDirectory());
      const yaml = readdirSync(dir).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml");
      expect(files.sort(), dir).toEqual(yaml.sort());
    }
  });

  it("builds every overlay as kustomize does, each holding every object of the base", () => {
    const ids = (objects: Manifest[]) => objects.map((o) => `${o.kind}/${o.metadata.name}`);
    const baseIds = ids(base());
    expect(ids(kustomize(BASE))).toEqual(baseIds);
    expect(overlays().map((d) => d.split("/").pop())).toEqual(
      expect.arrayContaining(["cert-manager", "monitoring", "sqlite"]),
    );
    // An overlay inside the folder of its base is a cycle kustomize refuses: the base is base/.
    for (const dir of overlays()) expect(ids(kustomize(dir)), dir).toEqual(expect.arrayContaining(baseIds));
  });

  it.each(BUILDS)(
    "passes a server-side dry run of every object of %s against the real apiserver",
    async (_, build) => {
      // The namespaced objects need their namespace to exist (a dry run of it creates nothing).
      await core.createNamespace({ body: { metadata: { name: "agentbox-system" } } }).catch(() => {});
      const kinds = [...base(), ...sqlite()].map((o) => o.kind);
      expect(kinds).toEqual(expect.arrayContaining(Object.keys(PLURALS)));
      expect(await dryRun(send, build())).toEqual([]);
      // A dry run stores nothing: no webhook configuration of that name is there afterwards.
      const stored = await send({
        method: "GET",
        path: "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/agentbox-functions",
      });
      expect(stored.status).toBe(404);
    },
  );

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

  it.each(BUILDS)(
    "%s sets only variables the host reads, and they start the router on the container ports",
    (_, build) => {
      const objects = build();
      const { ports } = hostContainer(objects);
      const service = one<V1Service>(objects, "Service", DATA_PLANE_SERVICE);
      withHostEnv(objects, (env) => {
        const read = hostSettings(env);
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
      });
    },
  );

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
    expect(
      await dryRun(
        send,
        objects.filter((o) => EXAMPLE_PLURALS[o.kind]),
      ),
    ).toEqual([]);

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

  it("grants nodes/proxy only with the sandbox-metrics component, which turns sampling on; nodes get with snapshots", () => {
    type Role = Manifest & { rules: { resources: string[]; verbs: string[] }[] };
    const nodeGrants = (objects: Manifest[]) =>
      objects
        .filter((o) => o.kind === "ClusterRole" || o.kind === "Role")
        .flatMap((o) => (o as Role).rules.filter((r) => r.resources.some((x) => x.startsWith("nodes"))))
        .map((r) => `${r.resources.join(",")}:${r.verbs.join(",")}`);
    const sampling = (objects: Manifest[]) =>
      withHostEnv(objects, (env) => hostSettings(env).value.usageSampleSeconds);
    // The base and its other overlays: no node grant, and sampling off (so no 403 every period).
    for (const build of [
      base(),
      sqlite(),
      ...overlays()
        .filter((d) => !d.endsWith("sandbox-metrics") && !d.endsWith("snapshots"))
        .map((d) => kustomize(d)),
    ]) {
      expect(nodeGrants(build)).toEqual([]);
      expect(sampling(build)).toBe(0);
    }
    // The snapshots component lets hosts read nodes (a snapshot whose node is gone is handed
    // over), never proxy to them, and leaves sampling off.
    const withSnapshots = kustomize(join(DEPLOY, "overlays/snapshots"));
    expect(nodeGrants(withSnapshots)).toEqual(["nodes:get"]);
    expect(sampling(withSnapshots)).toBe(0);
    // The component: its own ClusterRole, bound to the host's ServiceAccount, and 10 s sampling.
    const withMetrics = sandboxMetrics();
    expect(nodeGrants(withMetrics)).toEqual(["nodes:get", "nodes/proxy:get"]);
    const binding = one<{
      roleRef: { name: string };
      subjects: { kind: string; name: string; namespace: string }[];
    }>(withMetrics, "ClusterRoleBinding", "agentbox-functions-sandbox-metrics");
    expect(binding.roleRef.name).toBe("agentbox-functions-sandbox-metrics");
    expect(binding.subjects).toEqual([
      { kind: "ServiceAccount", name: "agentbox-functions", namespace: "agentbox-system" },
    ]);
    expect(sampling(withMetrics)).toBe(10);
  });

  it("ships the audit policy the local control plane runs", () => {
    const shipped = parse(readFileSync(join(DEPLOY, "apiserver/audit-policy.yaml"), "utf8"));
    expect(shipped).toEqual(AUDIT_POLICY);
  });
});
