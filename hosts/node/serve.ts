import { readFileSync } from "node:fs";
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { createServer, type ServerOptions } from "node:https";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";

/**
 * KEEP_ALIVE_MS is how long an idle client connection stays open: longer than the idle timeouts of
 * common load balancers and clients (60 s), so they close first. A server that closes first can
 * race a client reusing the connection, and that request fails with "socket hang up".
 */
const KEEP_ALIVE_MS = 65_000;

/** Served is a listening server and the handles a stopping host drains it with (ADR 0029). */
export interface Served {
  /**
   * stopAccepting closes the listener and the idle connections; requests under way go on, and
   * every answer from now on closes its connection (`Connection: close`), so no client sends a
   * new request on a connection the host is about to cut.
   */
  stopAccepting(): void;
  /** inFlight counts the requests under way (not yet answered in full, nor dropped). */
  inFlight(): number;
  /** settled resolves once no request is under way. */
  settled(): Promise<void>;
  /** close cuts every connection left, requests under way included; resolves once closed. */
  close(): Promise<void>;
}

/** serveHttps serves app over HTTPS on 127.0.0.1:port; resolves once listening. */
export function serveHttps(
  app: Hono,
  port: number,
  certFile: string,
  keyFile: string,
  host = "127.0.0.1",
): Promise<Served> {
  const open = new Set<ServerResponse>();
  const idle: (() => void)[] = [];
  let draining = false;
  const track = (res: ServerResponse) => {
    if (draining) res.setHeader("connection", "close");
    open.add(res);
    res.once("close", () => {
      open.delete(res);
      if (open.size === 0) for (const resolve of idle.splice(0)) resolve();
    });
  };
  // Every request is counted before the app sees it (the app may answer within the same tick).
  const counted = (options: ServerOptions, listener: RequestListener) =>
    createServer(options, (req: IncomingMessage, res: ServerResponse) => {
      track(res);
      listener(req, res);
    });
  return new Promise<Served>((resolve, reject) => {
    const server = serve(
      {
        fetch: app.fetch,
        port,
        hostname: host,
        createServer: counted as typeof createServer,
        serverOptions: {
          cert: readFileSync(certFile),
          key: readFileSync(keyFile),
          keepAliveTimeout: KEEP_ALIVE_MS,
          // Node requires headersTimeout above keepAliveTimeout.
          headersTimeout: KEEP_ALIVE_MS + 1000,
        },
      },
      () => {
        const closed = new Promise<void>((r) => server.once("close", () => r()));
        const stopAccepting = () => {
          if (draining) return;
          draining = true;
          for (const res of open) if (!res.headersSent) res.setHeader("connection", "close");
          server.close();
          if ("closeIdleConnections" in server) server.closeIdleConnections();
        };
        resolve({
          stopAccepting,
          inFlight: () => open.size,
          settled: () => (open.size === 0 ? Promise.resolve() : new Promise<void>((r) => idle.push(r))),
          // The apiserver keeps its webhook connections alive; cut them, or close() never ends.
          close: async () => {
            stopAccepting();
            if ("closeAllConnections" in server) server.closeAllConnections();
            await closed;
          },
        });
      },
    );
    server.once("error", reject);
  });
}
