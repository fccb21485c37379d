/**
 * rpc.ts serves Connect calls (unary and server-streaming, JSON) from a table of handlers, with
 * the stream plumbing envd has: keepalive messages every `Keepalive-Ping-Interval` seconds, the
 * `Connect-Timeout-Ms` deadline, and the client's disconnect as an abort signal.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  contentTypeFits,
  endStreamEnvelope,
  errorJson,
  httpStatusOf,
  messageEnvelope,
  parseJsonObject,
  parseTimeoutMs,
  RpcError,
  type RpcKind,
  streamRequestMessage,
  toRpcError,
} from "./connect.ts";
import type { Sandbox } from "./pods.ts";

type Msg = Record<string, unknown>;

/** StreamContext is what a streaming handler gets: send, the end signal, the deadline. */
export interface StreamContext {
  send(message: unknown): void;
  signal: AbortSignal;
  timeoutMs: number | undefined;
}

/** Method is one RPC: unary answers a message; a stream sends messages until it resolves. */
export type Method =
  | { kind: "unary"; handle(sbx: Sandbox, msg: Msg): Promise<unknown> }
  | {
      kind: "server_streaming";
      keepalive: unknown;
      handle(sbx: Sandbox, msg: Msg, ctx: StreamContext): Promise<void>;
    };

/** DEFAULT_KEEPALIVE_SECONDS is envd's keepalive interval when the client names none. */
const DEFAULT_KEEPALIVE_SECONDS = 90;

/** rpcError answers a Connect error in the form the method kind calls for, before any message. */
export function answerRpcError(res: ServerResponse, kind: RpcKind, err: RpcError): void {
  if (kind === "unary") {
    res
      .writeHead(httpStatusOf(err.code), { "content-type": "application/json" })
      .end(JSON.stringify(errorJson(err)));
    return;
  }
  res.writeHead(200, { "content-type": "application/connect+json" }).end(endStreamEnvelope(err));
}

/** serveRpc runs a method for a request whose body was read whole. */
export async function serveRpc(
  req: IncomingMessage,
  res: ServerResponse,
  sbx: Sandbox,
  method: Method,
  body: Buffer,
): Promise<void> {
  if (!contentTypeFits(method.kind, req.headers["content-type"])) {
    const message = `unsupported content type ${req.headers["content-type"] ?? ""}`;
    const headers = { "content-type": "application/json", "accept-post": acceptFor(method.kind) };
    res.writeHead(415, headers).end(JSON.stringify({ code: "unknown", message }));
    return;
  }
  const version = req.headers["connect-protocol-version"];
  if (version !== undefined && version !== "1") {
    answerRpcError(
      res,
      method.kind,
      new RpcError("invalid_argument", `Connect-Protocol-Version must be 1, got ${version}`),
    );
    return;
  }
  if (method.kind === "unary") {
    try {
      const out = await method.handle(sbx, parseJsonObject(body));
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(out));
    } catch (e) {
      answerRpcError(res, "unary", toRpcError(e));
    }
    return;
  }
  let msg: Msg;
  let timeoutMs: number | undefined;
  try {
    msg = streamRequestMessage(body);
    timeoutMs = parseTimeoutMs(header(req, "connect-timeout-ms"));
  } catch (e) {
    answerRpcError(res, "server_streaming", toRpcError(e));
    return;
  }
  await serveStream(req, res, sbx, method, msg, timeoutMs);
}

async function serveStream(
  req: IncomingMessage,
  res: ServerResponse,
  sbx: Sandbox,
  method: Extract<Method, { kind: "server_streaming" }>,
  msg: Msg,
  timeoutMs: number | undefined,
): Promise<void> {
  const ended = new AbortController();
  const onClose = () => ended.abort(new RpcError("canceled", "client went away"));
  res.on("close", onClose);
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    res.writeHead(200, { "content-type": "application/connect+json" });
  };
  const send = (m: unknown) => {
    if (ended.signal.aborted) return;
    start();
    res.write(messageEnvelope(m));
  };
  const seconds = Number(header(req, "keepalive-ping-interval"));
  const interval = Number.isFinite(seconds) && seconds >= 1 ? seconds : DEFAULT_KEEPALIVE_SECONDS;
  const keepalive = setInterval(() => send(method.keepalive), interval * 1000);
  const deadline = timeoutMs
    ? setTimeout(
        () => ended.abort(new RpcError("deadline_exceeded", "the stream's deadline passed")),
        timeoutMs,
      )
    : undefined;
  let failure: RpcError | undefined;
  try {
    await Promise.race([
      method.handle(sbx, msg, { send, signal: ended.signal, timeoutMs }),
      new Promise<never>((_, reject) =>
        ended.signal.addEventListener("abort", () => reject(ended.signal.reason)),
      ),
    ]);
  } catch (e) {
    failure = toRpcError(e);
  } finally {
    clearInterval(keepalive);
    clearTimeout(deadline);
    res.off("close", onClose);
    if (!ended.signal.aborted) ended.abort(new RpcError("canceled", "stream ended"));
  }
  if (res.destroyed || res.writableEnded) return;
  start();
  res.end(endStreamEnvelope(failure));
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function acceptFor(kind: RpcKind): string {
  return kind === "unary" ? "application/json" : "application/connect+json";
}
