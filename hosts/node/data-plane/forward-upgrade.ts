// Forwarding a protocol upgrade (websockets, HTTP/1.1's `upgrade` event): the request is decided
// as any other, sent to the pod with Upgrade and `Connection: upgrade`, and once the pod switches
// protocols its 101 goes back and the two sockets are piped to each other until either ends or
// both stay silent for the idle timeout. A pod that answers without upgrading gets its answer
// forwarded, then the connection closes. The sockets are held with the sandbox's upstream, so the
// route going (a release) closes them. An upgrade request with a body is a 400: what follows its
// head goes to the pod raw once the protocol switches, so there must be nothing before that.
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { pipeline } from "node:stream";
import { endToEndHeaders } from "../../../lib/data-plane/hop-by-hop.ts";
import { upgradeProblem } from "../../../lib/data-plane/request-framing.ts";
import { dataPlaneError } from "../../../lib/data-plane/route.ts";
import type { Log } from "../../../lib/util/log.ts";
import { writeErrorToSocket } from "./answer-error.ts";
import { decideRequest, type Routing } from "./decide-request.ts";
import { DIAL_MS, hostOf, IDLE_MS, upstreamRequest } from "./forward-request.ts";

const noop = () => {};

/** responseHead is an HTTP/1.1 response head: status line and headers, ending in a blank line. */
function responseHead(status: number, message: string, headers: Record<string, string | string[]>): string {
  const lines = [`HTTP/1.1 ${status} ${message}`];
  for (const [name, value] of Object.entries(headers))
    for (const v of typeof value === "string" ? [value] : value) lines.push(`${name}: ${v}`);
  return `${lines.join("\r\n")}\r\n\r\n`;
}

/** forwardUpgrade serves one upgrade request (never throws). */
export function forwardUpgrade(
  routing: Routing,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  log: Log,
): void {
  socket.on("error", noop);
  // The server hands a net.Socket (or a TLS one) as a Duplex.
  (socket as Socket).setTimeout(IDLE_MS, () => socket.destroy());
  const host = hostOf(req);
  const problem = upgradeProblem(req.headers);
  if (problem !== undefined) {
    routing.traffic.refused(400);
    writeErrorToSocket(socket, dataPlaneError(400, problem));
    return;
  }
  decideRequest(routing, { host, method: req.method ?? "GET", target: req.url ?? "", headers: req.headers })
    .then((decided) => {
      if (!decided.ok) {
        routing.traffic.refused(decided.error.status);
        return writeErrorToSocket(socket, decided.error);
      }
      if (socket.destroyed) return;
      const { route } = decided;
      // The upgraded connection is the sandbox's activity for as long as the client's socket is open.
      const exchange = routing.traffic.begin(route.sandboxId, decided.portClass, decided.active);
      socket.once("close", () => exchange.end());
      const up = upstreamRequest(decided, host, req, false);
      const dialTimer = setTimeout(
        () => up.destroy(new Error("connecting to the sandbox timed out")),
        DIAL_MS,
      );
      up.on("socket", (s) => s.once("connect", () => clearTimeout(dialTimer)));
      const onClientGone = () => up.destroy();
      socket.once("close", onClientGone);
      up.on("upgrade", (upRes, upSocket, upHead) => {
        socket.off("close", onClientGone);
        upSocket.on("error", noop);
        upSocket.setTimeout(IDLE_MS, () => upSocket.destroy());
        if (!routing.upstreams.hold(route.sandboxId, upSocket)) {
          upSocket.destroy();
          return writeErrorToSocket(
            socket,
            dataPlaneError(502, "The sandbox was not found", { sandboxId: route.sandboxId }),
          );
        }
        exchange.responded(upRes.statusCode ?? 101);
        socket.on("data", (chunk: Buffer) => exchange.bytesIn(chunk.length));
        upSocket.on("data", (chunk: Buffer) => exchange.bytesOut(chunk.length));
        const h = endToEndHeaders(upRes.headers, { upgrade: true });
        socket.write(responseHead(upRes.statusCode ?? 101, upRes.statusMessage ?? "Switching Protocols", h));
        if (upHead.length > 0) socket.write(upHead);
        if (head.length > 0) upSocket.write(head);
        // Each direction ends on its own (a half-close is forwarded); a failure closes both.
        const fail = (err: Error | null) => {
          if (!err) return;
          socket.destroy();
          upSocket.destroy();
        };
        pipeline(socket, upSocket, fail);
        pipeline(upSocket, socket, fail);
      });
      up.on("response", (upRes) => {
        exchange.responded(upRes.statusCode ?? 502);
        upRes.on("error", noop);
        socket.write(
          responseHead(upRes.statusCode ?? 502, upRes.statusMessage ?? "", {
            ...endToEndHeaders(upRes.headers),
            connection: "close",
          }),
        );
        pipeline(upRes, socket, () => socket.destroy());
      });
      up.on("error", (err) => {
        clearTimeout(dialTimer);
        if (!socket.destroyed) exchange.failed();
        log.debug({ err: String(err), sandboxId: route.sandboxId }, "data plane: upgrade upstream failed");
        writeErrorToSocket(
          socket,
          dataPlaneError(502, "The sandbox is running but the port did not answer", {
            sandboxId: route.sandboxId,
          }),
        );
      });
      up.end();
    })
    .catch((e: unknown) => {
      log.error({ err: String(e) }, "data plane upgrade failed");
      writeErrorToSocket(socket, dataPlaneError(500, "the router failed to route this request"));
    });
}
