import { GROUP, RESOURCE, VERSION } from "../../lib/crd/keys.ts";

/**
 * WEBHOOK_CONFIG_NAME names both webhook configurations of a host reached by URL (the local
 * control plane, `cluster webhooks`), so re-registering replaces them. The in-cluster install
 * (infra/deploy/base/webhooks.yaml) names its own "agentbox-functions": the two never overwrite each
 * other.
 */
export const WEBHOOK_CONFIG_NAME = "agentbox-functions-local";

/**
 * renderWebhookConfigs returns the ValidatingWebhookConfiguration and MutatingWebhookConfiguration
 * that send our three kinds' CREATE and UPDATE requests to baseUrl (+ /admission/validate and
 * /admission/mutate), trusting caPem.
 *
 * Failure policy: validation fails closed (Fail) because an invalid Env or Pool that got stored
 * would be acted on by every tick; defaulting fails open (Ignore) because the CRD schema
 * applies the same defaults. Only the main resources are matched, never /status or /scale, so
 * the reconcile steps' status writes and `kubectl scale` keep working while the webhook is
 * down, and updates that leave the spec unchanged (finalizers, deletion) are always allowed.
 */
export function renderWebhookConfigs(baseUrl: string, caPem: string) {
  const caBundle = Buffer.from(caPem).toString("base64");
  const rules = [
    {
      apiGroups: [GROUP],
      apiVersions: [VERSION],
      operations: ["CREATE", "UPDATE"],
      resources: [RESOURCE.SANDBOX_TEMPLATES, RESOURCE.SANDBOX_POOLS, RESOURCE.SANDBOX_ENVS],
      scope: "*",
    },
  ];
  const common = (path: string) => ({
    clientConfig: { url: `${baseUrl.replace(/\/$/, "")}${path}`, caBundle },
    rules,
    admissionReviewVersions: ["v1"],
    sideEffects: "None",
    timeoutSeconds: 5,
    matchPolicy: "Equivalent",
  });
  return {
    validating: {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "ValidatingWebhookConfiguration",
      metadata: { name: WEBHOOK_CONFIG_NAME },
      webhooks: [
        { name: "validate.agents.navix.sh", failurePolicy: "Fail", ...common("/admission/validate") },
      ],
    },
    mutating: {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: "MutatingWebhookConfiguration",
      metadata: { name: WEBHOOK_CONFIG_NAME },
      webhooks: [
        {
          name: "default.agents.navix.sh",
          failurePolicy: "Ignore",
          reinvocationPolicy: "Never",
          ...common("/admission/mutate"),
        },
      ],
    },
  };
}
