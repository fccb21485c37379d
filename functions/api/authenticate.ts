import { isNotFound } from "../../lib/kube/errors.ts";
import { decodeStoredKeyEntry, hashApiKey, type Tenant } from "../../lib/sandboxes/api-keys.ts";
import type { ApiDeps } from "./deps.ts";

/**
 * authenticate maps a presented API key to its tenant by looking its SHA-256 up in the keys
 * Secret. It reads the apiserver's watch cache first and, for a key not found there, etcd itself,
 * so a key created a moment ago works and a revoked key stops working within the cache's lag
 * (milliseconds). Only hashes are stored, so the Secret never reveals a usable key; undefined for
 * unknown keys or no Secret.
 */
export async function authenticate(
  deps: ApiDeps,
  presented: string | undefined,
): Promise<Tenant | undefined> {
  if (!presented) return undefined;
  const hash = await hashApiKey(presented);
  const lookup = async (cached: boolean) => {
    try {
      const secret = await deps.kube.getSecret(deps.apiKeys.namespace, deps.apiKeys.name, { cached });
      const entry = secret.data?.[hash];
      return entry ? decodeStoredKeyEntry(entry) : undefined;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  };
  return (await lookup(true)) ?? lookup(false);
}
