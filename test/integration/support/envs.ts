import type { CoreV1Api } from "@kubernetes/client-node";
import type { HostDeps } from "../../../functions/host-deps.ts";
import { tick } from "../../../functions/runs/tick.ts";
import { httpsRequest } from "./http.ts";
import { kube } from "./kube.ts";
import { runUntil } from "./steps.ts";

/** ENVS and TEMPLATES address the SandboxEnv and SandboxTemplate resources for the custom objects API. */
export const ENVS = { group: "agents.navix.sh", version: "v1alpha1", plural: "sandboxenvs" };
export const TEMPLATES = { group: "agents.navix.sh", version: "v1alpha1", plural: "sandboxtemplates" };

/** templateObject is a small valid SandboxTemplate running `image`. */
export function templateObject(
  name: string,
  version: string,
  image: string,
  extra: Record<string, unknown> = {},
) {
  return {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxTemplate",
    metadata: { name, labels: { "sample.agentbox.dev/tier": "gold" } },
    spec: {
      version,
      idleImage: "registry.local/sandbox/idle:1",
      template: {
        spec: {
          containers: [{ name: "sandbox", image, resources: { requests: { cpu: "250m", memory: "256Mi" } } }],
        },
      },
      runtimes: [{ name: "e2b", port: 49983 }],
      ...extra,
    },
  };
}

/** envObject is a SandboxEnv of `template` whose local segment lists `members`. */
export function envObject(
  namespace: string,
  name: string,
  template: string,
  members: Record<string, unknown>[],
  extra: Record<string, unknown> = {},
) {
  return {
    apiVersion: "agents.navix.sh/v1alpha1",
    kind: "SandboxEnv",
    metadata: { name, namespace },
    spec: { templateRef: { name: template }, clusters: [{ clusterID: "local", members }], ...extra },
  };
}

/**
 * createTemplateAndEnv creates a template running `image` and, in namespace, an Env of it whose
 * local segment lists `members` (`extra` on its spec: autoscaling groups, overrides).
 */
export async function createTemplateAndEnv(
  namespace: string,
  template: string,
  env: string,
  members: Record<string, unknown>[],
  extra: Record<string, unknown> = {},
): Promise<void> {
  const { custom } = kube();
  await custom.createClusterCustomObject({ ...TEMPLATES, body: templateObject(template, "v1", "python:3") });
  await custom.createNamespacedCustomObject({
    ...ENVS,
    namespace,
    body: envObject(namespace, env, template, members, extra),
  });
}

/**
 * tickUntil plays the host's tick over one namespace (pools and Envs, as the real tick runs them)
 * until the condition holds (see runUntil).
 */
export function tickUntil<T>(
  deps: HostDeps,
  namespace: string,
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  return runUntil(
    what,
    () => tick(deps, { namespace, periodMs: 0, jitter: 0, concurrency: 4 }),
    check,
    timeoutMs,
  );
}

/** eventsAbout lists the Events about one object of the namespace, oldest first. */
export async function eventsAbout(core: CoreV1Api, namespace: string, name: string) {
  const list = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` });
  return list.items.map((e) => ({ type: e.type, reason: e.reason, message: e.message ?? "" }));
}

/**
 * printerColumns reads a resource as `kubectl get` shows it: the apiserver's Table rendering of the
 * CRD's printer columns, as {column name: cell} per row.
 */
export async function printerColumns(path: string): Promise<Record<string, unknown>[]> {
  const { cluster } = kube();
  const res = await httpsRequest(`${cluster.server}${path}`, cluster.caCert, {
    headers: {
      authorization: `Bearer ${cluster.adminToken}`,
      accept: "application/json;as=Table;v=v1;g=meta.k8s.io",
    },
  });
  const table = JSON.parse(res.body.toString()) as {
    columnDefinitions: { name: string }[];
    rows: { cells: unknown[] }[];
  };
  return table.rows.map((row) =>
    Object.fromEntries(table.columnDefinitions.map((c, i) => [c.name, row.cells[i]])),
  );
}
