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

/** tokensOf splits comma-separated header values into lower-case tokens. */
function tokensOf(value: string | readonly string[] | undefined): string[] {
  const values = typeof value === "string" ? [value] : (value ?? []);
  return values
    .flatMap((v) => v.split(","))
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t !== "");
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
  const listed = new Set(tokensOf(headers.connection));
  const out: Record<string, string | string[]> = {};
  for (const [rawName, value] of Object.entries(headers)) {
    const name = rawName.toLowerCase();
    if (value === undefined || name.startsWith(":") || HOP_BY_HOP.includes(name) || listed.has(name))
      continue;
    out[name] = typeof value === "string" ? value : [...value];
  }
  if (tokensOf(headers.te).includes("trailers")) out.te = "trailers";
  const upgrade = headers.upgrade;
  if (options.upgrade && upgrade !== undefined) {
    out.upgrade = typeof upgrade === "string" ? upgrade : upgrade.join(", ");
    out.connection = "upgrade";
  }
  return out;
}
