import type { V1Secret } from "@kubernetes/client-node";
import { orMissing } from "../../lib/kube/errors.ts";
import { decodeStoredKeyEntry, hashApiKey, type Tenant } from "../../lib/sandboxes/api-keys.ts";
import type { ApiDeps } from "./deps.ts";

/**
 * authenticate maps a presented API key to its tenant by looking its SHA-256 up in the keys
 * Secret. It reads the apiserver's watch cache first (a read the host's requests share for a
 * second, deps.keyCacheReads, then, for a key that read does not show, one of its own) and, for
 * a key not found there, etcd itself (shared by the host's requests within a second,
 * deps.keyReads), so a key created a moment ago works and a revoked key stops working within
 * about two seconds (ADR 0020). Only hashes are stored, so the Secret never reveals a usable key;
 * undefined for unknown keys or no Secret.
 */
export async function authenticate(
  deps: ApiDeps,
  presented: string | undefined,
): Promise<Tenant | undefined> {
  if (!presented) return undefined;
  const hash = await (deps.hashKey ?? hashApiKey)(presented);
  const read = (cached: boolean) =>
    orMissing(deps.kube.getSecret(deps.apiKeys.namespace, deps.apiKeys.name, { cached }));
  const lookup = (secret: V1Secret | undefined) => {
    const entry = secret?.data && Object.hasOwn(secret.data, hash) ? secret.data[hash] : undefined;
    return entry ? decodeStoredKeyEntry(entry) : undefined;
  };
  // A read shared for a second serves known keys; a key it does not show (made since, or
  // unknown) gets a read of its own from the cache, as fresh as the cache is.
  const shared = deps.keyCacheReads ? lookup(await deps.keyCacheReads.get(() => read(true))) : undefined;
  if (shared) return shared;
  const cached = lookup(await read(true));
  if (cached) return cached;
  // Not in the watch cache: a key made a moment ago, or no key at all. One etcd read per
  // interval serves every such request of this host (deps.keyReads), so unknown keys stay cheap.
  return lookup(await (deps.keyReads ? deps.keyReads.get(() => read(false)) : read(false)));
}
