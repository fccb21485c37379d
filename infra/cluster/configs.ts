import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";

/** writeKubeconfig writes a kubeconfig that reaches server with a bearer token, trusting caFile. */
export function writeKubeconfig(
  file: string,
  server: string,
  caFile: string,
  token: string,
  user = "admin",
): void {
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "agentbox-local", cluster: { server, "certificate-authority": caFile } }],
    users: [{ name: user, user: { token } }],
    contexts: [
      { name: "agentbox-local", context: { cluster: "agentbox-local", user, namespace: "default" } },
    ],
    "current-context": "agentbox-local",
  };
  writeFileSync(file, stringify(config), { mode: 0o600 });
}

/**
 * AUDIT_POLICY records what the product reacts to: pod and pod-status writes with the response
 * body (the pod's labels name its pool without another read), writes to our three kinds at
 * Metadata level (the object reference is enough to find the pool or the Env), and Secret writes
 * at Metadata level (names only, never data: an ips-<env> pull Secret re-renders its Env).
 */
export const AUDIT_POLICY = {
  apiVersion: "audit.k8s.io/v1",
  kind: "Policy",
  omitStages: ["RequestReceived", "ResponseStarted"],
  rules: [
    {
      level: "RequestResponse",
      verbs: ["create", "update", "patch", "delete", "deletecollection"],
      resources: [{ group: "", resources: ["pods", "pods/status"] }],
    },
    {
      level: "Metadata",
      verbs: ["create", "update", "patch", "delete", "deletecollection"],
      resources: [
        {
          group: "agents.navix.sh",
          resources: [
            "sandboxpools",
            "sandboxpools/status",
            "sandboxpools/scale",
            "sandboxenvs",
            "sandboxenvs/status",
            "sandboxtemplates",
          ],
        },
        { group: "", resources: ["secrets"] },
      ],
    },
    { level: "None" },
  ],
};

/**
 * writeCallbackConfigs writes the files with which the apiserver calls the Node host: the audit
 * webhook kubeconfig (server = auditUrl) and the admission plugin configuration; both present
 * the same bearer token, so the host can authenticate the apiserver on every callback.
 */
export function writeCallbackConfigs(dir: string, auditUrl: string, caFile: string, token: string) {
  const auditPolicy = join(dir, "audit-policy.yaml");
  writeFileSync(auditPolicy, stringify(AUDIT_POLICY));
  const auditKubeconfig = join(dir, "audit-webhook.kubeconfig");
  writeKubeconfig(auditKubeconfig, auditUrl, caFile, token, "kube-apiserver");
  const admissionKubeconfig = join(dir, "admission-webhook.kubeconfig");
  writeFileSync(
    admissionKubeconfig,
    stringify({ apiVersion: "v1", kind: "Config", users: [{ name: "*", user: { token } }] }),
    { mode: 0o600 },
  );
  const webhookConfig = {
    apiVersion: "apiserver.config.k8s.io/v1",
    kind: "WebhookAdmissionConfiguration",
    kubeConfigFile: admissionKubeconfig,
  };
  const admissionConfig = join(dir, "admission-config.yaml");
  writeFileSync(
    admissionConfig,
    stringify({
      apiVersion: "apiserver.config.k8s.io/v1",
      kind: "AdmissionConfiguration",
      plugins: [
        { name: "ValidatingAdmissionWebhook", configuration: webhookConfig },
        { name: "MutatingAdmissionWebhook", configuration: webhookConfig },
      ],
    }),
  );
  return { auditPolicy, auditKubeconfig, admissionConfig };
}

/** writeKwokConfig renders infra/kwok/stages.yaml with this cluster's delays. */
export function writeKwokConfig(
  file: string,
  stagesTemplate: string,
  pullDelayMs: number,
  backoffDelayMs: number,
) {
  const rendered = readFileSync(stagesTemplate, "utf8")
    .replaceAll("__PULL_DELAY_MS__", String(pullDelayMs))
    .replaceAll("__BACKOFF_DELAY_MS__", String(backoffDelayMs));
  writeFileSync(file, rendered);
}
