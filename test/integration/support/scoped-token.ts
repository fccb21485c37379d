import { readFileSync } from "node:fs";
import {
  type CoreV1Api,
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1PolicyRule,
} from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";

/** NAME is the ServiceAccount, Role and RoleBinding a namespace-scoped deployment gets. */
const NAME = "agentbox-functions";

/**
 * namespacedToken is a namespace-scoped deployment's identity: a ServiceAccount in ns bound by a
 * RoleBinding to a Role with the rules of infra/deploy/base/rbac.yaml's ClusterRole, in ns only. It
 * returns a token of that ServiceAccount: the apiserver refuses it anything outside ns.
 */
export async function namespacedToken(kc: KubeConfig, core: CoreV1Api, ns: string): Promise<string> {
  const rbacYaml = readFileSync(new URL("../../../infra/deploy/base/rbac.yaml", import.meta.url), "utf8");
  const clusterRole = parseAllDocuments(rbacYaml)
    .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; rules?: V1PolicyRule[] })
    .find((o) => o.kind === "ClusterRole" && o.metadata?.name === NAME);
  if (!clusterRole?.rules) throw new Error(`infra/deploy/base/rbac.yaml has no ClusterRole ${NAME}`);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: NAME } } });
  await rbac.createNamespacedRole({
    namespace: ns,
    body: { metadata: { name: NAME }, rules: clusterRole.rules },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name: NAME },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: NAME },
      subjects: [{ kind: "ServiceAccount", name: NAME, namespace: ns }],
    },
  });
  const token = await core.createNamespacedServiceAccountToken({
    name: NAME,
    namespace: ns,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const value = token.status?.token;
  if (!value) throw new Error(`no token for ${ns}/${NAME}`);
  return value;
}
