// API keys authenticate callers of the /v1 REST API and name their tenant (team, user). Only a
// key's SHA-256 is stored (as a Secret data key), so a leaked Secret cannot be replayed; the
// value stored next to the hash says whose key it is. WebCrypto only: this runs in workerd too.
import * as v from "valibot";
import { isLabelValue } from "../kube/label-value.ts";
import { rfc3339 } from "../util/time.ts";

/** API_KEY_PREFIX starts every key, so a leaked key is recognisable (secret scanners, logs). */
export const API_KEY_PREFIX = "abx_";

/** Tenant is who a key belongs to; team and user become the sandbox's scheduling labels. */
export interface Tenant {
  team: string;
  user: string;
  /** admin keys see every sandbox and template, whatever their owner or visibility. */
  admin?: boolean;
}

const KEY_BYTES = 32;

/** base64url encodes bytes without padding (RFC 4648 §5), with btoa so it runs everywhere. */
function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/**
 * generateApiKey makes a new key: API_KEY_PREFIX then 32 random bytes (256 bits, from
 * crypto.getRandomValues) in unpadded base64url, 47 characters in all. Keys are shown once; only
 * their hash is kept.
 */
export function generateApiKey(): string {
  return API_KEY_PREFIX + base64url(crypto.getRandomValues(new Uint8Array(KEY_BYTES)));
}

/**
 * hashApiKey is the lowercase hex SHA-256 of a key's UTF-8 bytes: the name under which the key is
 * stored and looked up. A plain hash (no salt) is enough: keys are 256-bit random, not passwords.
 */
export async function hashApiKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(key));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

const LabelSafe = v.pipe(v.string(), v.check(isLabelValue));

/** KeyEntry is the stored JSON; unknown fields (written by newer versions) are ignored. */
const KeyEntry = v.looseObject({
  team: LabelSafe,
  user: LabelSafe,
  admin: v.optional(v.boolean()),
});

/**
 * encodeKeyEntry renders the value stored next to a key's hash: the tenant and when the key was
 * created (RFC 3339), as JSON. `admin` is written only when true. The caller base64-encodes it
 * into the Secret's data.
 */
export function encodeKeyEntry(tenant: Tenant, createdAt: Date): string {
  return JSON.stringify({
    team: tenant.team,
    user: tenant.user,
    ...(tenant.admin ? { admin: true } : {}),
    createdAt: rfc3339(createdAt),
  });
}

/**
 * decodeKeyEntry reads a stored entry back into a Tenant, or undefined when it is not JSON, team
 * or user is missing, empty or not a label value, or admin is not a boolean: a garbled entry
 * authenticates nobody rather than throwing (or granting admin by accident).
 */
export function decodeKeyEntry(json: string): Tenant | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    return undefined;
  }
  const parsed = v.safeParse(KeyEntry, raw);
  if (!parsed.success) return undefined;
  const { team, user, admin } = parsed.output;
  return admin ? { team, user, admin: true } : { team, user };
}

/**
 * decodeStoredKeyEntry reads an entry as the keys Secret's data holds it (base64 of the JSON):
 * undefined, like any garbled entry, when it is not base64.
 */
export function decodeStoredKeyEntry(base64: string): Tenant | undefined {
  let json: string;
  try {
    json = atob(base64);
  } catch {
    return undefined;
  }
  return decodeKeyEntry(json);
}

/** KeyListing is one stored key as operators see it: an ID (its hash's first 12 hex digits), whose it is. */
export type KeyListing =
  | { id: string; team: string; user: string; admin: boolean; createdAt?: string }
  | { id: string; garbled: true };

/** KEY_ID_LENGTH: how many hex digits of a key's hash name it in listings and revocations. */
export const KEY_ID_LENGTH = 12;

/**
 * keyListing shows one Secret entry (hash → base64 entry) without anything that could be replayed:
 * the hash's prefix as ID, the tenant and when it was made; a garbled entry says so.
 */
export function keyListing(hash: string, base64: string): KeyListing {
  const id = hash.slice(0, KEY_ID_LENGTH);
  const tenant = decodeStoredKeyEntry(base64);
  if (!tenant) return { id, garbled: true };
  let createdAt: unknown;
  try {
    createdAt = (JSON.parse(atob(base64)) as { createdAt?: unknown }).createdAt;
  } catch {
    createdAt = undefined;
  }
  return {
    id,
    team: tenant.team,
    user: tenant.user,
    admin: tenant.admin === true,
    ...(typeof createdAt === "string" ? { createdAt } : {}),
  };
}

/**
 * bearerOrApiKey extracts the key a request presents: the `X-API-Key` header, else an
 * `Authorization: Bearer <key>` header (scheme case-insensitive, surrounding spaces ignored).
 * Header names must already be lowercase, as fetch's Headers and hono give them. Empty values and
 * other schemes (Basic, …) give undefined.
 */
export function bearerOrApiKey(headers: {
  authorization?: string;
  "x-api-key"?: string;
}): string | undefined {
  const direct = headers["x-api-key"]?.trim();
  if (direct) return direct;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? "");
  return match?.[1];
}
