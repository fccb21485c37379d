import { readFileSync } from "node:fs";
import { createServer } from "node:https";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";

/** serveHttps serves app over HTTPS on 127.0.0.1:port; resolves once listening. */
export function serveHttps(app: Hono, port: number, certFile: string, keyFile: string, host = "127.0.0.1") {
  return new Promise<{ close: () => Promise<void> }>((resolve, reject) => {
    const server = serve(
      {
        fetch: app.fetch,
        port,
        hostname: host,
        createServer,
        serverOptions: { cert: readFileSync(certFile), key: readFileSync(keyFile) },
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
