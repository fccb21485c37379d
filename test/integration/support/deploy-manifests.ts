// infra/deploy as the tests read it: the installs kustomize builds (the base, its overlays), the
// examples beside them, the host's container in a build and the environment it starts with, and
// a server-side dry run of objects against the apiserver.
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { V1ConfigMap, V1Container, V1Deployment, V1Secret } from "@kubernetes/client-node";
import { readHostEnv } from "../../../hosts/node/config.ts";
import type { KubeTransport } from "../../../lib/kube/transport.ts";
import { kustomize, type Manifest, manifests } from "./kustomize.ts";

/** DEPLOY is what `kubectl apply -k infra/deploy` applies: the base, BASE. */
export const DEPLOY = "infra/deploy";
export const BASE = join(DEPLOY, "base");
const OVERLAYS = join(DEPLOY, "overlays");
/** SQLITE is the overlay for small installs: one replica, the history in SQLite on a volume. */
const SQLITE = join(OVERLAYS, "sqlite");
const EXAMPLES = join(DEPLOY, "examples/data-plane");
/** HISTORY_SECRET is the example of the Secret the operator creates for the PostgreSQL history. */
const HISTORY_SECRET = join(DEPLOY, "examples/history/postgres-secret.yaml");
/** HOST names the host's Deployment and its ConfigMap. */
export const HOST = "agentbox-functions";

/** PLURALS names the resources of the kinds the base and its SQLite overlay hold (the apiserver's paths need them). */
export const PLURALS: Record<string, string> = {
  Namespace: "namespaces",
  ServiceAccount: "serviceaccounts",
  ClusterRole: "clusterroles",
  ClusterRoleBinding: "clusterrolebindings",
  Role: "roles",
  RoleBinding: "rolebindings",
  ConfigMap: "configmaps",
  PersistentVolumeClaim: "persistentvolumeclaims",
  Deployment: "deployments",
  PodDisruptionBudget: "poddisruptionbudgets",
  Service: "services",
  ValidatingWebhookConfiguration: "validatingwebhookconfigurations",
  MutatingWebhookConfiguration: "mutatingwebhookconfigurations",
};

/** EXAMPLE_PLURALS adds the built-in kinds of the examples, which the apiserver can dry-run. */
export const EXAMPLE_PLURALS: Record<string, string> = {
  ...PLURALS,
  Ingress: "ingresses",
  NetworkPolicy: "networkpolicies",
  Secret: "secrets",
};

const pathOf = (m: Manifest) => {
  const plural = EXAMPLE_PLURALS[m.kind];
  if (!plural) throw new Error(`the test knows no path for kind ${m.kind}: add it to PLURALS`);
  const group = m.apiVersion === "v1" ? "/api/v1" : `/apis/${m.apiVersion}`;
  const ns = m.metadata.namespace ? `/namespaces/${m.metadata.namespace}` : "";
  return `${group}${ns}/${plural}/${m.metadata.name}`;
};

/** base is what `kustomize build infra/deploy` (the base, base/) holds. */
export const base = () => kustomize(DEPLOY);
/** sqlite is what `kustomize build infra/deploy/overlays/sqlite` holds. */
export const sqlite = () => kustomize(SQLITE);
/** overlays are the folders of overlays/. */
export const overlays = () =>
  readdirSync(OVERLAYS)
    .map((d) => join(OVERLAYS, d))
    .filter((d) => statSync(d).isDirectory());

/** examples are the objects of examples/data-plane/, every file. */
export function examples(): Manifest[] {
  return readdirSync(EXAMPLES)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .flatMap((f) => manifests(join(EXAMPLES, f)));
}

/** one is the object of that kind and name in a list; the test fails when it is missing. */
export function one<T>(objects: Manifest[], kind: string, name: string): T {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found as unknown as T;
}

/** dryRun sends each object as a server-side apply with dryRun=All; the answers that failed. */
export async function dryRun(send: KubeTransport, objects: Manifest[]) {
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
export function hostContainer(objects: Manifest[]) {
  const deployment = one<V1Deployment>(objects, "Deployment", HOST);
  const pod = deployment.spec?.template;
  const container = pod?.spec?.containers.find((c) => c.name === "host");
  if (!container) throw new Error("the Deployment has no container named host");
  const ports = new Map((container.ports ?? []).map((p) => [p.name ?? "", p.containerPort]));
  return { deployment, pod: pod?.spec, labels: pod?.metadata?.labels ?? {}, container, ports };
}

/** envValue is a variable's literal value in the container's env (not its ConfigMaps). */
export const envValue = (c: V1Container, name: string) => c.env?.find((e) => e.name === name)?.value;

/** mountOf is the volume (and its mount) a file path of the host's container lies in. */
export function mountOf(objects: Manifest[], path: string) {
  const { pod, container } = hostContainer(objects);
  const mount = container.volumeMounts?.find((m) => path.startsWith(`${m.mountPath}/`));
  const volume = pod?.volumes?.find((v) => v.name === mount?.name);
  return { mount, volume, key: mount ? path.slice(mount.mountPath.length + 1) : "" };
}

/** historySecret is the example Secret of the PostgreSQL history (examples/, not the base). */
export const historySecret = () => manifests(HISTORY_SECRET) as unknown as V1Secret[];

/**
 * withHostEnv hands over the environment the host's container starts with: its ConfigMaps, then
 * its own env; each *_FILE names a temporary file holding what its mounted Secret would: the
 * example Secret's value for that key, else a fresh secret.
 */
export function withHostEnv<T>(objects: Manifest[], use: (env: Record<string, string>) => T): T {
  const { container } = hostContainer(objects);
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    const name = from.configMapRef?.name ?? "";
    Object.assign(env, one<V1ConfigMap>(objects, "ConfigMap", name).data);
  }
  for (const e of container.env ?? []) env[e.name] = e.value ?? "";
  const dir = mkdtempSync(join(tmpdir(), "agentbox-deploy-env-"));
  const secrets = historySecret();
  try {
    for (const name of Object.keys(env).filter((n) => n.endsWith("_FILE"))) {
      const { volume, key } = mountOf(objects, env[name] ?? "");
      const secret = secrets.find((s) => s.metadata?.name === volume?.secret?.secretName);
      env[name] = join(dir, name);
      writeFileSync(env[name], secret?.stringData?.[key] ?? randomBytes(24).toString("hex"));
    }
    return use(env);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** hostSettings is what the host's own reader makes of an environment; refused settings throw. */
export function hostSettings(env: Record<string, string>) {
  const read = readHostEnv(env);
  if (!read.ok) throw new Error(`the manifests' settings are refused: ${read.errors.join("; ")}`);
  return read;
}
