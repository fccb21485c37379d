/**
 * auth.ts checks who may call a pod's envd, as the real envd does (e2b-dev/infra,
 * packages/envd/internal/api/auth.go and init.go, read at 54693ff): the holder of the access
 * token (`X-Access-Token`, compared in constant time), or, for `/files`, a request signed with it.
 * The signature is envd's: `v1_` + unpadded base64 of sha256 over
 * `path:operation:username:token[:expiration]`, with an empty username when none is given;
 * an expiration in the past invalidates it. An envd that holds no token yet (no /init with one
 * reached it) checks nothing at all: every route, every file, any user. That is the hole the
 * control plane closes by initialising envd on every claim; the stand-in keeps it open so tests
 * see what a real envd would do.
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
 * checkFileAuth says why a /files request is refused, or undefined when allowed: with no token on
 * the pod (podToken ""), nothing is checked (envd's validateSigning returns early); otherwise a
 * token header must match, or else the signature must match and not be expired (nowSeconds: Unix
 * time).
 */
export function checkFileAuth(podToken: string, auth: FileAuth, nowSeconds: number): string | undefined {
  if (!podToken) return undefined;
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

/**
 * AUTH_EXCLUDED_ROUTES are the routes envd serves without the access token header even once it
 * holds one (envd's authExcludedPaths): /files checks its own (header or signature), /init its
 * own (checkInitToken), /health nothing.
 */
export const AUTH_EXCLUDED_ROUTES: ReadonlySet<string> = new Set([
  "GET /health",
  "GET /files",
  "POST /files",
  "POST /init",
]);

/**
 * checkInitToken says why an /init is refused (envd answers 401), or undefined when allowed, by
 * envd's validateInitAccessToken outside Firecracker (no MMDS hash to consult, as on a pod): an
 * envd without a token takes any /init (first-time setup, with or without a token); one with a
 * token takes only an /init carrying that same token in its body. A different token is "access
 * token validation failed", none is "access token reset not authorized": nobody who lacks the
 * token can replace or clear it. The X-Access-Token header plays no part (/init is excluded from
 * the header check).
 */
export function checkInitToken(podToken: string, requested: string): string | undefined {
  if (!podToken) return undefined;
  if (requested && tokenMatches(podToken, requested)) return undefined;
  return requested ? "access token validation failed" : "access token reset not authorized";
}
