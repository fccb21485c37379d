// Forwarding one request (HTTP/1.1, or an HTTP/2 stream through the compatibility API) to its
// sandbox's pod, streaming both ways: nothing is buffered, there is no total timeout (a
// commands.run may last an hour), only an idle timeout per socket. The body is re-framed by the
// router (request-framing.ts): its Content-Length kept and held to, a body of unknown length sent
// chunked, no body nothing, so no byte the client sends becomes a request the router did not
// decide. The client's body is piped into the upstream request once its connection is up, so a
// dial that fails (or a kept-alive connection the pod had closed) is retried once, on a new
// connection, as long as no byte of the body was read; after that a failure is a 502 (or a cut
// response when its head has gone). A client that goes away destroys the upstream request.
import {
  type Agent,
  type ClientRequest,
  type IncomingMessage,
  request,
  type ServerResponse,
} from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { endToEndHeaders } from "../../../lib/data-plane/hop-by-hop.ts";
import { type BodyFraming, bodyFraming } from "../../../lib/data-plane/request-framing.ts";
import { dataPlaneError } from "../../../lib/data-plane/route.ts";
import type { Log } from "../../../lib/util/log.ts";
import { type AnyResponse, answerError } from "./answer-error.ts";
import { type Decided, decideRequest, type Routing } from "./decide-request.ts";
import type { Exchange } from "./traffic.ts";

/** IDLE_MS: a proxied stream with no byte either way for this long is closed (both sides). */
export const IDLE_MS = 10 * 60_000;

/** DIAL_MS bounds connecting to a pod. */
export const DIAL_MS = 10_000;

/** AnyRequest is an HTTP/1.1 request or an HTTP/2 compatibility request. */
export type AnyRequest = IncomingMessage | Http2ServerRequest;

/** hostOf is what names the target: HTTP/2's :authority, else Host. */
export function hostOf(req: AnyRequest): string | undefined {
  const authority = req.headers[":authority"];
  return typeof authority === "string" ? authority : req.headers.host;
}

const noop = () => {};

/** NO_BODY is the framing of an upgrade request (refused when it has a body) and of a bodiless one. */
const NO_BODY: BodyFraming = { kind: "none" };

/** framingOf is how a request's body goes upstream (HTTP/2: whether its stream ended with the headers). */
function framingOf(req: AnyRequest): BodyFraming {
  if (req.httpVersionMajor !== 2) return bodyFraming({ headers: req.headers });
  return bodyFraming({
    headers: req.headers,
    endedWithHeaders: (req as Http2ServerRequest).stream.endAfterHeaders,
  });
}

/**
 * upstreamRequest opens the request to the pod: end-to-end headers only (with Upgrade when the
 * agent is false: an upgrade has a connection of its own), the Host the client named, and the
 * body's framing: Content-Length as the client's, or chunked when its length is unknown.
 */
export function upstreamRequest(
  decided: Extract<Decided, { ok: true }>,
  host: string | undefined,
  req: AnyRequest,
  agent: Agent | false,
  framing: BodyFraming = NO_BODY,
): ClientRequest {
  const headers = endToEndHeaders(req.headers, { upgrade: agent === false });
  if (host) headers.host = host;
  if (framing.kind === "chunked") headers["transfer-encoding"] = "chunked";
  else if (framing.kind === "length") headers["content-length"] = String(framing.length);
  else delete headers["content-length"];
  return request({
    host: decided.route.podIP,
    port: decided.port,
    method: req.method,
    path: req.url,
    headers,
    setHost: false,
    agent,
  });
}

/** forwardRequest serves one request: decided by the rules, then proxied (never throws). */
export function forwardRequest(routing: Routing, req: AnyRequest, res: AnyResponse, log: Log): void {
  req.on("error", noop);
  res.on("error", noop);
  const host = hostOf(req);
  const framing = framingOf(req);
  if (framing.kind === "bad") {
    routing.traffic.refused(400);
    answerError(res, dataPlaneError(400, framing.message));
    return;
  }
  decideRequest(routing, { host, method: req.method ?? "GET", target: req.url ?? "", headers: req.headers })
    .then((decided) => {
      if (!decided.ok) {
        routing.traffic.refused(decided.error.status);
        answerError(res, decided.error);
        return;
      }
      // The exchange is the sandbox's activity until the response closes, whichever way it ends.
      const exchange = routing.traffic.begin(decided.route.sandboxId, decided.portClass, decided.active);
      if (res.destroyed) exchange.end();
      else res.once("close", () => exchange.end());
      proxy(routing, decided, framing, host, req, res, log, exchange, false);
    })
    .catch((e: unknown) => {
      log.error({ err: String(e) }, "data plane request failed");
      answerError(res, dataPlaneError(500, "the router failed to route this request"));
    });
}

/** proxy sends the request upstream; retried is true on the one retry. */
function proxy(
  routing: Routing,
  decided: Extract<Decided, { ok: true }>,
  framing: BodyFraming,
  host: string | undefined,
  req: AnyRequest,
  res: AnyResponse,
  log: Log,
  exchange: Exchange,
  retried: boolean,
): void {
  const { route, port } = decided;
  if (res.destroyed || (req.destroyed && !req.readableEnded)) {
    exchange.end();
    return;
  }
  // The route may have gone since the decision: its Agent went with it, and must not come back.
  const current = routing.routes.route(route.sandboxId);
  if (current?.podUid !== route.podUid || current.podIP !== route.podIP) {
    exchange.responded(502);
    answerError(res, dataPlaneError(502, "The sandbox was not found", { sandboxId: route.sandboxId }));
    return;
  }
  const up = upstreamRequest(decided, host, req, routing.upstreams.agentFor(route.sandboxId), framing);
  const length = framing.kind === "length" ? framing.length : -1;
  let consumed = 0;
  let connected = false;
  let responded = false;
  let dialTimer: ReturnType<typeof setTimeout> | undefined;
  // A body longer or shorter than its Content-Length is cut before the pipe writes it: the pod's
  // connection must never hold a byte past the request the router decided.
  const count = (chunk: Buffer) => {
    consumed += chunk.length;
    exchange.bytesIn(chunk.length);
    if (length >= 0 && consumed > length) up.destroy(new Error("the body ran past its Content-Length"));
  };
  const ended = () => {
    if (length >= 0 && consumed !== length)
      up.destroy(new Error("the body ended short of its Content-Length"));
  };
  // clientGone tells a client that left (no upstream error) from a sandbox that failed.
  let clientGone = false;
  const onClientGone = () => {
    if (res.writableFinished) return;
    clientGone = true;
    up.destroy();
  };
  res.once("close", onClientGone);
  up.setTimeout(IDLE_MS, () => up.destroy(new Error("the upstream connection was idle too long")));
  up.on("socket", (socket) => {
    const start = () => {
      clearTimeout(dialTimer);
      connected = true;
      if (framing.kind === "none") {
        up.end();
        return;
      }
      req.on("data", count);
      req.once("end", ended);
      req.pipe(up);
    };
    if (!socket.connecting) return start();
    dialTimer = setTimeout(() => up.destroy(new Error("connecting to the sandbox timed out")), DIAL_MS);
    socket.once("connect", start);
  });
  up.on("response", (upRes) => {
    responded = true;
    try {
      // The HTTP/2 compatibility response takes the same (status, headers) call as HTTP/1.1's.
      (res as ServerResponse).writeHead(upRes.statusCode ?? 502, endToEndHeaders(upRes.headers));
    } catch (e) {
      log.debug({ err: String(e), sandboxId: route.sandboxId }, "data plane: unforwardable response head");
      upRes.on("error", noop);
      upRes.destroy();
      exchange.failed();
      answerError(res, dataPlaneError(502, "the sandbox answered a response the router cannot forward"));
      return;
    }
    // A body cut short (an error, or a close before its end) cuts the client's response too, so
    // the client sees a broken stream, not a hang. (pipe, not stream.pipeline: pipeline's abort
    // machinery cost about 18 µs a request in a profile of GET /health; the client's side is
    // onClientGone's.)
    const cut = () => {
      if (!clientGone) exchange.failed();
      up.destroy();
      res.destroy();
    };
    upRes.on("error", cut);
    upRes.on("close", () => {
      if (!upRes.complete) cut();
    });
    exchange.responded(upRes.statusCode ?? 502);
    // A head without a body yet (a stream that says nothing for a while) goes out at once; one
    // whose body is already here leaves with it, in one write.
    let bodyCame = false;
    setImmediate(() => {
      if (!bodyCame && !res.destroyed) (res as ServerResponse).flushHeaders();
    });
    upRes.on("data", (chunk: Buffer) => {
      bodyCame = true;
      exchange.bytesOut(chunk.length);
    });
    upRes.pipe(res as NodeJS.WritableStream);
  });
  up.on("error", (err: NodeJS.ErrnoException) => {
    clearTimeout(dialTimer);
    res.off("close", onClientGone);
    req.off("data", count);
    req.off("end", ended);
    req.unpipe(up);
    const stale = up.reusedSocket && (err.code === "ECONNRESET" || err.code === "EPIPE");
    if (!retried && !responded && consumed === 0 && (!connected || stale) && !res.headersSent) {
      proxy(routing, decided, framing, host, req, res, log, exchange, true);
      return;
    }
    if (clientGone) return;
    exchange.failed();
    if (res.headersSent || responded) {
      res.destroy();
      return;
    }
    log.debug({ err: String(err), sandboxId: route.sandboxId, port }, "data plane: upstream failed");
    answerError(
      res,
      dataPlaneError(502, "The sandbox is running but the port did not answer", {
        sandboxId: route.sandboxId,
      }),
    );
  });
}
