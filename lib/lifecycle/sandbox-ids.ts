// Sandbox ids name a sandbox for its whole life (API paths, the sandbox-id label, the history
// record), so a new one must be unguessable, unique without coordination, and a valid label value.
import { isLabelValue } from "../kube/label-value.ts";

/** SANDBOX_ID_PREFIX starts the ids this control plane mints. */
const SANDBOX_ID_PREFIX = "sbx-";
/** RFC 4648 base32 in lowercase: 32 symbols, so `byte & 31` picks one without bias. */
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";
const ID_CHARS = 20;

/**
 * newSandboxId mints an id: `sbx-` then 20 lowercase base32 characters (100 random bits from
 * crypto.getRandomValues), 24 characters in all, so it is a label value, a DNS label and safe in
 * URLs. No coordination is needed: a collision needs about 2^50 ids for even odds.
 */
export function newSandboxId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(ID_CHARS));
  let id = SANDBOX_ID_PREFIX;
  for (const b of bytes) id += BASE32[b & 31];
  return id;
}

/**
 * isSandboxId tells whether s can name a sandbox: any non-empty label value of at most 63
 * characters. Deliberately wider than newSandboxId's format, so sandboxes claimed by agentbox
 * (other id formats) stay addressable; the check keeps path parameters out of label selectors
 * when they could change the selector's meaning.
 */
export function isSandboxId(s: string): boolean {
  return isLabelValue(s);
}
