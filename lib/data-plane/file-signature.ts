// Signed /files URLs, checked by the router itself. The e2b SDK's uploadUrl and downloadUrl let a
// holder of the envd token hand out a URL that works without it: `/files?path=…&username=…&
// signature=v1_…[&signature_expiration=…]`, the signature being `v1_` + unpadded base64 of
// SHA-256 over `path:operation:username:token[:expiration]` (operation `read` for GET, `write` for
// POST; an absent username or path is the empty string). The real envd checks that signature only
// once it holds a token, and a pod whose envd was never initialised holds none, so the router is
// the one guard: it recomputes the signature with the sandbox's token and forwards only a match
// that has not expired. Sync SHA-256 (lib/util/sha256.ts), so decisions stay pure and synchronous;
// only a tokenless signed /files request pays for it.
import { sha256Hex } from "../util/sha256.ts";
import { constantTimeEqual } from "./constant-time-equal.ts";

/** FileOperation is what a signature grants: a download (GET) or an upload (POST). */
export type FileOperation = "read" | "write";

/** SIGNED_PARAMS are the query parameters a signature covers or carries: each at most once. */
const SIGNED_PARAMS = ["path", "username", "signature", "signature_expiration"] as const;

/** base64OfHex is the unpadded base64 of the bytes a hex string spells. */
function base64OfHex(hex: string): string {
  let binary = "";
  for (let i = 0; i < hex.length; i += 2)
    binary += String.fromCharCode(Number.parseInt(hex.slice(i, i + 2), 16));
  return btoa(binary).replace(/=+$/, "");
}

/**
 * fileSignature is the signature the SDK puts on a /files URL for `operation` on `path` as
 * `username`, made with the sandbox's envd `token`, valid until `expiration` (Unix seconds) if set.
 */
export function fileSignature(
  path: string,
  operation: FileOperation,
  username: string,
  token: string,
  expiration?: number,
): string {
  const signed = `${path}:${operation}:${username}:${token}${expiration === undefined ? "" : `:${expiration}`}`;
  return `v1_${base64OfHex(sha256Hex(signed))}`;
}

/**
 * fileSignatureProblem says why a tokenless /files request (method GET or POST, the request
 * target as sent) is not signed with `token`, or undefined when its signature is valid and not
 * expired at `nowSeconds`. A parameter given twice is refused: envd might read the other copy.
 */
export function fileSignatureProblem(
  method: string,
  target: string,
  token: string,
  nowSeconds: number,
): string | undefined {
  const q = target.indexOf("?");
  let params: URLSearchParams;
  try {
    params = new URLSearchParams(q < 0 ? "" : target.slice(q + 1));
  } catch {
    return "the query is not valid";
  }
  for (const name of SIGNED_PARAMS)
    if (params.getAll(name).length > 1) return `the ${name} parameter is given more than once`;
  const signature = params.get("signature");
  if (!signature) return "the signature parameter is missing";
  const expirationText = params.get("signature_expiration");
  let expiration: number | undefined;
  if (expirationText !== null) {
    if (!/^[0-9]{1,12}$/.test(expirationText))
      return "the signature_expiration parameter is not a Unix time in seconds";
    expiration = Number(expirationText);
  }
  const operation: FileOperation = method.toUpperCase() === "POST" ? "write" : "read";
  const expected = fileSignature(
    params.get("path") ?? "",
    operation,
    params.get("username") ?? "",
    token,
    expiration,
  );
  if (!constantTimeEqual(signature, expected)) return "the signature is not valid for this sandbox";
  if (expiration !== undefined && expiration < nowSeconds) return "the signature has expired";
  return undefined;
}
