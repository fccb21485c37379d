// A proxy forwards end-to-end header fields only (RFC 9110 §7.6.1): Connection and every field it
// lists, and the fields known to be hop-by-hop whether listed or not (Proxy-Connection,
// Keep-Alive, TE, Transfer-Encoding, Upgrade; Proxy-Authenticate and Proxy-Authorization, which
// belong to the proxy hop; HTTP2-Settings of h2c). HTTP/2 pseudo-header fields (`:path`, …) are
// the next hop's to set. Two exceptions keep streams working: `TE: trailers` (gRPC needs it end
// to end) and, for a protocol upgrade (websockets), Upgrade with `Connection: upgrade`.
import type { HeaderBag } from "./request-target.ts";

/** HOP_BY_HOP are the fields dropped whether Connection lists them or not (lower case). */
export const HOP_BY_HOP: readonly string[] = [
  "connection",
  "proxy-connection",
  "keep-alive",
  "te",
  "transfer-encoding",
  "upgrade",
  "proxy-authenticate",
  "proxy-authorization",
  "http2-settings",
];

/** HOP_BY_HOP_NAMES is HOP_BY_HOP as a set: every forwarded header's name is looked up in it. */
const HOP_BY_HOP_NAMES: ReadonlySet<string> = new Set(HOP_BY_HOP);

/** NO_TOKENS is what an absent field lists. */
const NO_TOKENS: readonly string[] = [];

/** tokensOf splits comma-separated header values into lower-case tokens. */
function tokensOf(value: string | readonly string[] | undefined): readonly string[] {
  if (value === undefined) return NO_TOKENS;
  const tokens: string[] = [];
  for (const v of typeof value === "string" ? [value] : value)
    for (const part of v.split(",")) {
      const token = part.trim().toLowerCase();
      if (token !== "") tokens.push(token);
    }
  return tokens;
}

/**
 * endToEndHeaders is what to forward of a message's headers (names lower case, as node:http
 * gives them): without the hop-by-hop fields above, those its Connection lists, and pseudo-header
 * fields. With `upgrade` (the proxy forwards a protocol upgrade), Upgrade is kept and Connection
 * becomes `upgrade`. TE is kept as `trailers` when it offers trailers. Pure: returns a new object.
 */
export function endToEndHeaders(
  headers: HeaderBag,
  options: { upgrade?: boolean } = {},
): Record<string, string | string[]> {
  // Every proxied request and response passes here: no set without a Connection field, and one
  // pass over the names (a profile of GET /health put this function at 16 µs a request before).
  const listed = headers.connection === undefined ? undefined : new Set(tokensOf(headers.connection));
  const out: Record<string, string | string[]> = {};
  for (const rawName of Object.keys(headers)) {
    const value = headers[rawName];
    if (value === undefined) continue;
    const name = rawName.toLowerCase();
    if (name.startsWith(":") || HOP_BY_HOP_NAMES.has(name) || listed?.has(name)) continue;
    out[name] = typeof value === "string" ? value : [...value];
  }
  if (headers.te !== undefined && tokensOf(headers.te).includes("trailers")) out.te = "trailers";
  const upgrade = headers.upgrade;
  if (options.upgrade && upgrade !== undefined) {
    out.upgrade = typeof upgrade === "string" ? upgrade : upgrade.join(", ");
    out.connection = "upgrade";
  }
  return out;
}
