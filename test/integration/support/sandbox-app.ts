import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * SandboxApp is a server a sandbox serves on its pod IP (a kwok pod's loopback address), on a port
 * of its own: what a user's app in the sandbox would be, reached through the router.
 */
export interface SandboxApp {
  port: number;
  close(): void;
}

/**
 * sandboxApp serves `GET /hold?ms=N`: the response head at once, then nothing for N ms, then the
 * body "held" (chunked, so a connection cut before the end is an error at the client).
 */
export async function sandboxApp(podIP: string): Promise<SandboxApp> {
  const server = createServer((req, res) => {
    const ms = Number(new URL(req.url ?? "/", "http://app").searchParams.get("ms") ?? 0);
    res.writeHead(200, { "content-type": "text/plain" });
    res.flushHeaders();
    const timer = setTimeout(() => res.end("held"), ms);
    res.once("close", () => clearTimeout(timer));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, podIP, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}

/** HeldStream is a request through the router: opened once its head came, done with its body. */
export interface HeldStream {
  opened: Promise<void>;
  /** done resolves with the body of a 200, rejects with "<status> <body>" or the stream's error. */
  done: Promise<string>;
}

/** STREAM_TIMEOUT_MS bounds a held stream's silence (the longest hold the tests ask is 120 s). */
const STREAM_TIMEOUT_MS = 150_000;

/** openStream sends `GET path` to the sandbox's port through the router's plain listener (header routing). */
export function openStream(routerPort: number, sandboxId: string, port: number, path: string): HeldStream {
  let markOpened: () => void = () => {};
  let failOpen: (e: Error) => void = () => {};
  const opened = new Promise<void>((resolve, reject) => {
    markOpened = resolve;
    failOpen = reject;
  });
  const done = new Promise<string>((resolve, reject) => {
    const req = request({
      host: "127.0.0.1",
      port: routerPort,
      path,
      headers: { "e2b-sandbox-id": sandboxId, "e2b-sandbox-port": String(port) },
      timeout: STREAM_TIMEOUT_MS,
    });
    req.on("timeout", () => req.destroy(new Error("the stream was silent too long")));
    req.on("error", reject);
    req.on("response", (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        body += d;
      });
      res.on("error", reject);
      res.on("end", () =>
        res.statusCode === 200 ? resolve(body) : reject(new Error(`${res.statusCode} ${body}`)),
      );
      markOpened();
    });
    req.end();
  });
  // A stream that fails before its head fails `opened` too; either promise may go unread.
  done.catch((e: Error) => failOpen(e));
  opened.catch(() => {});
  return { opened, done };
}
