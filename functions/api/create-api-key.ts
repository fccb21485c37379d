import { encodeKeyEntry, generateApiKey, hashApiKey, type Tenant } from "../../lib/claims/api-keys.ts";
import { isAlreadyExists, isConflict } from "../../lib/kube/errors.ts";
import { escapePointer } from "../../lib/kube/json-patch.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * createApiKey mints a key for tenant and stores only its SHA-256 (with the tenant) in the keys
 * Secret, creating the Secret when missing; the key itself is returned once and never stored.
 */
export async function createApiKey(
  deps: Pick<HostDeps, "kube" | "apiKeys" | "now">,
  tenant: Tenant,
): Promise<string> {
  const { namespace, name } = deps.apiKeys;
  const key = generateApiKey();
  const hash = await hashApiKey(key);
  const value = btoa(encodeKeyEntry(tenant, deps.now()));
  await deps.kube
    .createSecret(namespace, {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name, namespace, labels: { "app.kubernetes.io/managed-by": "agentbox-functions" } },
      type: "Opaque",
      data: {},
    })
    .catch((e: unknown) => (isAlreadyExists(e) ? undefined : Promise.reject(e)));
  for (let attempt = 0; attempt < 10; attempt++) {
    const secret = await deps.kube.getSecret(namespace, name);
    try {
      await deps.kube.patchSecret(namespace, name, [
        { op: "test", path: "/metadata/resourceVersion", value: secret.metadata?.resourceVersion ?? "" },
        ...(secret.data ? [] : [{ op: "add" as const, path: "/data", value: {} }]),
        { op: "add", path: `/data/${escapePointer(hash)}`, value },
      ]);
      return key;
    } catch (e) {
      if (!isConflict(e)) throw e;
    }
  }
  throw new Error(`the Secret ${namespace}/${name} kept changing; try again`);
}
