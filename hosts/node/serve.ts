import { readFileSync } from "node:fs";
import { createServer } from "node:https";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";

/**
 * KEEP_ALIVE_MS is how long an idle client connection stays open: longer than the idle timeouts of
 * common load balancers and clients (60 s), so they close first. A server that closes first can
 * race a client reusing the connection, and that request fails with "socket hang up".
 */
const KEEP_ALIVE_MS = 65_000;

/** serveHttps serves app over HTTPS on 127.0.0.1:port; resolves once listening. */
export function serveHttps(app: Hono, port: number, certFile: string, keyFile: string, host = "127.0.0.1") {
  return new Promise<{ close: () => Promise<void> }>((resolve, reject) => {
    const server = serve(
      {
        fetch: app.fetch,
        port,
        hostname: host,
        createServer,
        serverOptions: {
          cert: readFileSync(certFile),
          key: readFileSync(keyFile),
          keepAliveTimeout: KEEP_ALIVE_MS,
          // Node requires headersTimeout above keepAliveTimeout.
          headersTimeout: KEEP_ALIVE_MS + 1000,
        },
      },
      () =>
        resolve({
          // The apiserver keeps its webhook connections alive; close them, or close() never ends.
          close: () =>
            new Promise<void>((r) => {
              server.close(() => r());
              if ("closeAllConnections" in server) server.closeAllConnections();
            }),
        }),
    );
    server.once("error", reject);
  });
}
