import type { V1Secret } from "@kubernetes/client-node";
import { decodeStoredKeyEntry, hashApiKey, type Tenant } from "../../lib/claims/api-keys.ts";
import { orMissing } from "../../lib/kube/errors.ts";
import type { HostDeps } from "../host-deps.ts";

/**
 * KEY_READ_SHARE_MS: how long one read of the keys Secret serves a host's key checks (the shared
 * watch-cache read, deps.keyCacheReads, and the last paced etcd read): a revoked key stops
 * working within about that, plus the watch cache's lag (ADR 0020).
 */
export const KEY_READ_SHARE_MS = 1000;

/**
 * KEY_MISS_GAP_MS: at least this long between two etcd reads of the keys Secret for keys the
 * shared read does not show (deps.keyReads): unknown keys cost a host at most 4 reads a second,
 * whatever their number, and a key made a moment ago is found within about this long.
 */
export const KEY_MISS_GAP_MS = 250;

type KeyDeps = Pick<HostDeps, "kube" | "apiKeys" | "hashKey" | "keyReads" | "keyCacheReads">;

/**
 * authenticate maps a presented API key to its tenant by looking its SHA-256 up in the keys
 * Secret (tenantOfKeyHash). Only hashes are stored, so the Secret never reveals a usable key;
 * undefined for unknown keys or no Secret.
 */
export async function authenticate(
  deps: KeyDeps,
  presented: string | undefined,
): Promise<Tenant | undefined> {
  if (!presented) return undefined;
  return tenantOfKeyHash(deps, await (deps.hashKey ?? hashApiKey)(presented));
}

/**
 * tenantOfKeyHash is the tenant of the key whose SHA-256 is `hash` (the console's sessions keep
 * only that), undefined when no such key is stored. It answers from the host's shared read of the
 * keys Secret (the watch cache, renewed once a second: deps.keyCacheReads), then from the last
 * etcd read while it is as young; a key neither shows (unknown, or made a moment ago) waits for
 * an etcd read that begins after it asked, paced to one per KEY_MISS_GAP_MS per host
 * (deps.keyReads). So a flood of bad keys costs the apiserver a fixed few reads a second, a key
 * made before a request arrived always authenticates it, and a revoked key stops working within
 * about two seconds (ADR 0020). Without the shared reads (tests), each check reads for itself.
 */
export async function tenantOfKeyHash(deps: KeyDeps, hash: string): Promise<Tenant | undefined> {
  const read = (cached: boolean) =>
    orMissing(deps.kube.getSecret(deps.apiKeys.namespace, deps.apiKeys.name, { cached }));
  const lookup = (secret: V1Secret | undefined) => {
    const entry = secret?.data && Object.hasOwn(secret.data, hash) ? secret.data[hash] : undefined;
    return entry ? decodeStoredKeyEntry(entry) : undefined;
  };
  const shared = deps.keyCacheReads ? lookup(await deps.keyCacheReads.get(() => read(true))) : undefined;
  if (shared) return shared;
  if (!deps.keyReads) return lookup(await read(false));
  const recent = deps.keyReads.recent(KEY_READ_SHARE_MS);
  const known = recent ? lookup(recent.value) : undefined;
  if (known) return known;
  return lookup(await deps.keyReads.get(() => read(false)));
}
