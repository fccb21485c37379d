// How a forwarded request's body is framed on its way to the pod, so that nothing reaches the
// sandbox that the router did not see as one request. The rule: the router re-frames every body
// itself, never relaying the client's framing bytes. A request with a Content-Length keeps it and
// is cut (both ways) if its body runs past or short of it; a body of unknown length (HTTP/1.1
// `Transfer-Encoding: chunked`, or an HTTP/2 stream that did not end with its headers and names no
// length) goes upstream chunked, whatever its method; a request with neither has no body, and
// nothing of it is piped. Before this, Transfer-Encoding was dropped as hop-by-hop and a GET's
// body piped unframed, so a chunked `GET /health` carrying `POST /init …` became a second request
// at envd, past every rule. Node's parser has already refused what HTTP/1.1 forbids (both
// Content-Length and Transfer-Encoding, conflicting lengths, chunked not last); these checks are
// the router's own, in case it is not. The request target must be origin-form (`/path?query`):
// absolute-form, `*` and authority-form are a 400 on every port, and an upgrade carries no body.
import type { HeaderBag } from "./request-target.ts";

/** BodyFraming says how to send a request's body upstream, or why it cannot be (a 400). */
export type BodyFraming =
  | { kind: "none" }
  | { kind: "length"; length: number }
  | { kind: "chunked" }
  | { kind: "bad"; message: string };

/** FramedRequest is what the framing reads of a request. */
export interface FramedRequest {
  headers: HeaderBag;
  /**
   * endedWithHeaders, for an HTTP/2 stream: its HEADERS frame ended it (no DATA can follow).
   * Undefined for HTTP/1.x, where only Content-Length or Transfer-Encoding announce a body.
   */
  endedWithHeaders?: boolean;
}

const NONE: BodyFraming = { kind: "none" };
const CHUNKED: BodyFraming = { kind: "chunked" };
const DIGITS = /^[0-9]{1,15}$/;

/** bodyFraming decides how the body of a request to forward is framed upstream (see the module doc). */
export function bodyFraming(req: FramedRequest): BodyFraming {
  const length = req.headers["content-length"];
  const te = req.headers["transfer-encoding"];
  if (te !== undefined) {
    if (length !== undefined)
      return { kind: "bad", message: "a request may not carry both Content-Length and Transfer-Encoding" };
    const last = (typeof te === "string" ? te : te.join(",")).split(",").at(-1)?.trim().toLowerCase();
    if (last !== "chunked")
      return { kind: "bad", message: "the Transfer-Encoding header must end in chunked" };
    return CHUNKED;
  }
  if (length !== undefined) {
    if (typeof length !== "string" || !DIGITS.test(length))
      return { kind: "bad", message: "the Content-Length header must be one decimal number" };
    return { kind: "length", length: Number(length) };
  }
  return req.endedWithHeaders === false ? CHUNKED : NONE;
}

/** targetProblem says why a request target is not origin-form (`/path?query`), or undefined. */
export function targetProblem(target: string): string | undefined {
  if (target.startsWith("/")) return undefined;
  return "the request target must be a path (origin-form, `/…`): absolute-form, authority-form and `*` are not forwarded";
}

/** upgradeProblem says why an upgrade request cannot be forwarded (it carries a body), or undefined. */
export function upgradeProblem(headers: HeaderBag): string | undefined {
  const length = headers["content-length"];
  if (headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0"))
    return "an upgrade request may not carry a body (Content-Length or Transfer-Encoding)";
  return undefined;
}
