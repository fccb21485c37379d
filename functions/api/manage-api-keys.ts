import {
  API_KEY_PREFIX,
  hashApiKey,
  KEY_ID_LENGTH,
  type KeyListing,
  keyListing,
} from "../../lib/claims/api-keys.ts";
import { isConflict, isNotFound } from "../../lib/kube/errors.ts";
import { escapePointer } from "../../lib/kube/json-patch.ts";
import type { HostDeps } from "../host-deps.ts";

type KeyDeps = Pick<HostDeps, "kube" | "apiKeys">;

/** listApiKeys lists the stored keys (IDs and tenants, never anything usable), oldest first. */
export async function listApiKeys(deps: KeyDeps): Promise<KeyListing[]> {
  const secret = await deps.kube.getSecret(deps.apiKeys.namespace, deps.apiKeys.name).catch((e: unknown) => {
    if (isNotFound(e)) return undefined;
    throw e;
  });
  const listed = Object.entries(secret?.data ?? {}).map(([hash, value]) => keyListing(hash, value));
  return listed.sort((a, b) =>
    ("createdAt" in a ? (a.createdAt ?? "") : "").localeCompare("createdAt" in b ? (b.createdAt ?? "") : ""),
  );
}

export type RevokeOutcome =
  | { ok: true; id: string }
  | { ok: false; reason: "not-found" | "ambiguous"; message: string };

/**
 * revokeApiKey removes one key from the keys Secret: named by the key itself or by its listed ID
 * (a prefix of its hash, at least 8 hex digits, matching exactly one key). The removal tests the
 * Secret's resourceVersion, so a key minted at the same moment is never lost; from then on the key
 * authenticates nobody, and its console sessions sign nobody in, within about two seconds: the key
 * check reads the Secret from the watch cache (a read a host shares among its requests for a
 * second, deps.keyCacheReads), and a key that read does not show is looked for in an etcd read
 * begun after it asked, paced per host (deps.keyReads; tenantOfKeyHash).
 */
export async function revokeApiKey(deps: KeyDeps, keyOrId: string): Promise<RevokeOutcome> {
  const { namespace, name } = deps.apiKeys;
  const byKey = keyOrId.startsWith(API_KEY_PREFIX) ? await hashApiKey(keyOrId) : undefined;
  if (!byKey && !/^[0-9a-f]{8,64}$/.test(keyOrId))
    return {
      ok: false,
      reason: "not-found",
      message: `"${keyOrId.slice(0, 16)}" is neither a key (${API_KEY_PREFIX}…) nor a key ID (8 to 64 hex digits, as listed)`,
    };
  for (let attempt = 0; attempt < 10; attempt++) {
    const secret = await deps.kube.getSecret(namespace, name).catch((e: unknown) => {
      if (isNotFound(e)) return undefined;
      throw e;
    });
    const hashes = Object.keys(secret?.data ?? {}).filter((h) =>
      byKey ? h === byKey : h.startsWith(keyOrId),
    );
    if (hashes.length === 0)
      return {
        ok: false,
        reason: "not-found",
        message: `no key ${keyOrId.slice(0, 16)} in ${namespace}/${name}`,
      };
    if (hashes.length > 1)
      return {
        ok: false,
        reason: "ambiguous",
        message: `${hashes.length} keys start with ${keyOrId}; give more digits`,
      };
    const hash = hashes[0] ?? "";
    try {
      await deps.kube.patchSecret(namespace, name, [
        { op: "test", path: "/metadata/resourceVersion", value: secret?.metadata?.resourceVersion ?? "" },
        { op: "remove", path: `/data/${escapePointer(hash)}` },
      ]);
      return { ok: true, id: hash.slice(0, KEY_ID_LENGTH) };
    } catch (e) {
      if (!isConflict(e)) throw e;
    }
  }
  throw new Error(`the Secret ${namespace}/${name} kept changing; try again`);
}
