import { isNotFound } from "../../lib/kube/errors.ts";
import { decodeKeyEntry, hashApiKey, type Tenant } from "../../lib/sandboxes/api-keys.ts";
import type { ApiDeps } from "./deps.ts";

/**
 * authenticate maps a presented API key to its tenant by looking its SHA-256 up in the keys
 * Secret, read fresh on every call (a revoked key stops working at once). Only hashes are stored,
 * so the Secret never reveals a usable key; undefined for unknown keys or no Secret.
 */
export async function authenticate(
  deps: ApiDeps,
  presented: string | undefined,
): Promise<Tenant | undefined> {
  if (!presented) return undefined;
  const hash = await hashApiKey(presented);
  try {
    const secret = await deps.kube.getSecret(deps.apiKeys.namespace, deps.apiKeys.name);
    const entry = secret.data?.[hash];
    return entry ? decodeKeyEntry(atob(entry)) : undefined;
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}
