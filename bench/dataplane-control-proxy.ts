// The control side of `npm run bench:dataplane`: a minimal Node reverse proxy, nothing of ours, in
// a process of its own. It says what any Node proxy on the same path gets from this machine, so
// the bench can tell the router's cost apart from the cost of one more process on the path: plain
// node:http, one keep-alive Agent to the envd address given as arguments (host, port); each
// request's method, path and headers go there and the response is piped back. The parent forks
// it, reads `{ready, port}`, and asks "close" over IPC at the end.
import { Agent, createServer, type IncomingHttpHeaders, request } from "node:http";
import type { AddressInfo } from "node:net";

const [upstreamHost = "", upstreamPort = ""] = process.argv.slice(2);
if (!process.send || !upstreamHost || !upstreamPort)
  throw new Error("dataplane-control-proxy: usage: fork with <envd host> <envd port> and an IPC channel");
const send = (m: unknown) => process.send?.(m);
const agent = new Agent({ keepAlive: true });

/** hop drops the headers of one connection, so each side keeps its own (keep-alive upstream). */
function hop(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { connection: _c, "keep-alive": _k, ...rest } = headers;
  return rest;
}

const server = createServer((req, res) => {
  const upstream = request(
    {
      host: upstreamHost,
      port: Number(upstreamPort),
      method: req.method,
      path: req.url,
      headers: hop(req.headers),
      agent,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, hop(answer.headers));
      answer.pipe(res);
    },
  );
  upstream.setTimeout(120_000, () => upstream.destroy(new Error("upstream took over 120 s")));
  upstream.on("error", () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
  req.pipe(upstream);
});
await new Promise<void>((resolve) => server.listen({ port: 0, host: "127.0.0.1" }, resolve));

process.on("message", async (m: { id: number; op: string }) => {
  server.closeAllConnections();
  agent.destroy();
  await new Promise((r) => server.close(r));
  send({ id: m.id });
  process.disconnect();
});
// The bench gone (a failed setup), the proxy goes too.
process.on("disconnect", () => process.exit(0));
send({ ready: true, port: (server.address() as AddressInfo).port });
