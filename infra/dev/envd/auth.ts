/**
 * auth.ts checks who may call a pod's envd: the holder of the sandbox's access token
 * (`X-Access-Token`, compared in constant time), or, for `/files`, a request signed with it.
 * The signature is envd's: `v1_` + unpadded base64 of sha256 over
 * `path:operation:username:token[:expiration]`, with an empty username when none is given;
 * an expiration in the past invalidates it.
 */
import { createHash, timingSafeEqual } from "node:crypto";

/** tokenMatches compares a presented token with the pod's in constant time (no token: no match). */
export function tokenMatches(expected: string, presented: string | undefined): boolean {
  if (!expected || presented === undefined) return false;
  const a = createHash("sha256").update(expected).digest();
  const b = createHash("sha256").update(presented).digest();
  return timingSafeEqual(a, b);
}

/** fileSignature is the signature of a /files operation, as the SDK computes it. */
export function fileSignature(
  path: string,
  operation: "read" | "write",
  username: string,
  token: string,
  expiration?: number,
): string {
  const parts = [path, operation, username, token, ...(expiration === undefined ? [] : [String(expiration)])];
  return `v1_${createHash("sha256").update(parts.join(":")).digest("base64").replace(/=+$/, "")}`;
}

/** FileAuth is what a /files request presents: a token header or signature parameters. */
export interface FileAuth {
  token?: string;
  path: string;
  operation: "read" | "write";
  username?: string;
  signature?: string;
  signatureExpiration?: string;
}

/**
 * checkFileAuth says why a /files request is refused, or undefined when allowed: a token header
 * must match; otherwise the signature must match and not be expired (nowSeconds: Unix time).
 */
export function checkFileAuth(podToken: string, auth: FileAuth, nowSeconds: number): string | undefined {
  if (auth.token !== undefined && auth.token !== "")
    return tokenMatches(podToken, auth.token)
      ? undefined
      : "access token present in header but does not match";
  if (!auth.signature) return "missing signature query parameter";
  let expiration: number | undefined;
  if (auth.signatureExpiration !== undefined) {
    if (!/^\d{1,12}$/.test(auth.signatureExpiration))
      return "signature_expiration must be a Unix time in seconds";
    expiration = Number(auth.signatureExpiration);
  }
  const expected = fileSignature(auth.path, auth.operation, auth.username ?? "", podToken, expiration);
  if (!tokenMatches(expected, auth.signature)) return "invalid signature";
  if (expiration !== undefined && expiration < nowSeconds) return "signature is already expired";
  return undefined;
}
