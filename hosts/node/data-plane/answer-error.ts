// Refusals in E2B's JSON shape (lib/data-plane's dataPlaneError), on a response (HTTP/1.1 or an
// HTTP/2 stream) or on a raw socket (an upgrade request, which has no response object, or a
// request node's parser refused).
import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import type { Duplex } from "node:stream";
import { type DataPlaneError, dataPlaneError } from "../../../lib/data-plane/route.ts";

/** AnyResponse is an HTTP/1.1 response or an HTTP/2 compatibility response. */
export type AnyResponse = ServerResponse | Http2ServerResponse;

/**
 * answerError answers a refusal, or ends the response when its head has gone already (writeHead is
 * called as HTTP/1.1's: the HTTP/2 compatibility response takes the same status-and-headers call).
 */
export function answerError(res: AnyResponse, error: DataPlaneError): void {
  if (res.headersSent || res.destroyed) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(error.body);
  (res as ServerResponse).writeHead(error.status, {
    ...error.headers,
    "content-length": String(Buffer.byteLength(body)),
  });
  res.end(body);
}

/** STATUS_TEXT names the statuses the router answers on a raw socket. */
const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
};

/** writeErrorToSocket answers a refused upgrade with a whole HTTP/1.1 response, then closes. */
export function writeErrorToSocket(socket: Duplex, error: DataPlaneError): void {
  if (socket.destroyed) return;
  const body = JSON.stringify(error.body);
  const head = [
    `HTTP/1.1 ${error.status} ${STATUS_TEXT[error.status] ?? "Error"}`,
    ...Object.entries(error.headers).map(([k, v]) => `${k}: ${v}`),
    `content-length: ${Buffer.byteLength(body)}`,
    "connection: close",
  ];
  socket.end(`${head.join("\r\n")}\r\n\r\n${body}`);
}

/**
 * answerClientError answers a request node's HTTP/1.x parser refused (a bad request line, header
 * or framing): 431 when its headers are too large, else 400 naming the parser's code, then closes.
 * A socket with a response of its own under way, not writable, or failing below HTTP (a reset, a
 * TLS error) is only closed: an answer there would be mistaken for that response.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  const code = err.code ?? "";
  const busy = (socket as Duplex & { _httpMessage?: unknown })._httpMessage !== undefined;
  if (!code.startsWith("HPE_") || busy || !socket.writable) {
    socket.destroy();
    return;
  }
  writeErrorToSocket(
    socket,
    code === "HPE_HEADER_OVERFLOW"
      ? dataPlaneError(431, "the request's headers are too large")
      : dataPlaneError(400, `the request is not valid HTTP/1.1 (${code})`),
  );
}
