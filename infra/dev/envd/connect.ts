/**
 * connect.ts is the Connect protocol as the envd stand-in speaks it: JSON only, unary and
 * server-streaming over HTTP/1.1 (https://connectrpc.com/docs/protocol). Pure functions, so the
 * framing is unit-tested without a server.
 *
 * - Unary: POST `application/json`, the body is the request message; the answer is 200 with the
 *   response message, or an HTTP error status with `{code, message}`.
 * - Server streaming: POST `application/connect+json`, the body is one envelope (1 flags byte,
 *   4 bytes big-endian length, the JSON message); the answer is 200 `application/connect+json`,
 *   one envelope per message, then an end-stream envelope (flag 0x02) `{error?, metadata?}`.
 */

/** ConnectCode is the snake_case name of a Connect error code. */
export type ConnectCode =
  | "canceled"
  | "unknown"
  | "invalid_argument"
  | "deadline_exceeded"
  | "not_found"
  | "already_exists"
  | "permission_denied"
  | "resource_exhausted"
  | "failed_precondition"
  | "aborted"
  | "out_of_range"
  | "unimplemented"
  | "internal"
  | "unavailable"
  | "data_loss"
  | "unauthenticated";

/** HTTP_STATUS maps each code to the status of a unary error answer, as the protocol defines. */
const HTTP_STATUS: Record<ConnectCode, number> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

/** RpcError is what a handler throws to answer a Connect error. */
export class RpcError extends Error {
  readonly code: ConnectCode;
  constructor(code: ConnectCode, message: string) {
    super(message);
    this.name = "RpcError";
    this.code = code;
  }
}

/** httpStatusOf is the HTTP status a unary error answer carries. */
export function httpStatusOf(code: ConnectCode): number {
  return HTTP_STATUS[code];
}

/** errorJson is the wire form of an error: `{code, message}`. */
export function errorJson(err: RpcError): { code: ConnectCode; message: string } {
  return { code: err.code, message: err.message };
}

/** toRpcError turns anything thrown by a handler into the error to answer (internal unless typed). */
export function toRpcError(e: unknown): RpcError {
  if (e instanceof RpcError) return e;
  return new RpcError("internal", e instanceof Error ? e.message : String(e));
}

export const FLAG_COMPRESSED = 0x01;
export const FLAG_END_STREAM = 0x02;

/** envelope frames one message of a stream. */
export function envelope(flags: number, payload: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + payload.length);
  out[0] = flags;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}

/** messageEnvelope frames a JSON message of a stream. */
export function messageEnvelope(message: unknown): Buffer {
  return envelope(0, Buffer.from(JSON.stringify(message)));
}

/** endStreamEnvelope frames the end of a stream, with its error if it failed. */
export function endStreamEnvelope(err?: RpcError): Buffer {
  return envelope(FLAG_END_STREAM, Buffer.from(JSON.stringify(err ? { error: errorJson(err) } : {})));
}

/** Envelope is one decoded frame. */
export interface Envelope {
  flags: number;
  payload: Buffer;
}

/**
 * decodeEnvelopes splits a whole request body into its frames; a truncated frame or a trailing
 * partial header is an invalid_argument error (the body was read to its end before this runs).
 */
export function decodeEnvelopes(body: Buffer): Envelope[] {
  const frames: Envelope[] = [];
  let at = 0;
  while (at < body.length) {
    if (body.length - at < 5) throw new RpcError("invalid_argument", "truncated envelope header");
    const flags = body[at] ?? 0;
    const length = body.readUInt32BE(at + 1);
    if (body.length - at - 5 < length) throw new RpcError("invalid_argument", "truncated envelope");
    frames.push({ flags, payload: body.subarray(at + 5, at + 5 + length) });
    at += 5 + length;
  }
  return frames;
}

/**
 * streamRequestMessage is the one request message of a server-streaming call: exactly one
 * uncompressed frame holding a JSON object.
 */
export function streamRequestMessage(body: Buffer): Record<string, unknown> {
  const frames = decodeEnvelopes(body);
  const first = frames[0];
  if (frames.length !== 1 || !first)
    throw new RpcError("invalid_argument", `expected one request message, got ${frames.length}`);
  if (first.flags & FLAG_COMPRESSED)
    throw new RpcError("unimplemented", "compressed request messages are not supported");
  return parseJsonObject(first.payload);
}

/** parseJsonObject parses a request message; anything but a JSON object is invalid_argument. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = body.length === 0 ? {} : JSON.parse(body.toString("utf8"));
  } catch {
    throw new RpcError("invalid_argument", "request message is not valid JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new RpcError("invalid_argument", "request message is not a JSON object");
  return value as Record<string, unknown>;
}

/** RpcKind says how a path is served: unary JSON or server-streaming JSON. */
export type RpcKind = "unary" | "server_streaming";

/**
 * checkContentType says whether a request's content type fits its RPC kind; a mismatch (e.g.
 * the binary protobuf codec) is answered 415 by the caller, as Connect servers do.
 */
export function contentTypeFits(kind: RpcKind, contentType: string | undefined): boolean {
  const type = (contentType ?? "").split(";")[0]?.trim().toLowerCase();
  return kind === "unary" ? type === "application/json" : type === "application/connect+json";
}

/**
 * parseTimeoutMs reads `Connect-Timeout-Ms` (at most 10 digits, as the protocol says);
 * undefined when absent, an invalid_argument error when malformed.
 */
export function parseTimeoutMs(header: string | undefined): number | undefined {
  if (header === undefined || header === "") return undefined;
  if (!/^\d{1,10}$/.test(header))
    throw new RpcError("invalid_argument", `malformed Connect-Timeout-Ms: ${header}`);
  return Number(header);
}
