import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * startFakeEnvd stands in for the envd of every kwok pod (the integration tests, and `npm start`
 * so the README's E2B journey works on the local cluster): the cluster gives pods loopback IPs
 * (127.32.0.0/16), so one server on 0.0.0.0 receives what the control plane sends to
 * podIP:port, and tells pods apart by the address they were called on. It keeps envd's contract:
 * POST /init sets the env vars and access token; GET /envs answers them to a caller with that
 * token. An /init whose env has AGENTBOX_TEST_FAIL_INIT answers 500 (a broken envd).
 */
export async function startFakeEnvd(): Promise<{ port: number; server: Server }> {
  const pods = new Map<string, { token: string; envVars: Record<string, string>; inits: number }>();
  const server = createServer((req, res) => {
    const ip = req.socket.localAddress ?? "";
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/init") {
        const body = JSON.parse(Buffer.concat(chunks).toString() || "{}") as {
          envVars?: Record<string, string>;
          accessToken?: string;
        };
        if (body.envVars?.AGENTBOX_TEST_FAIL_INIT) {
          res.writeHead(500).end("init failed");
          return;
        }
        const prev = pods.get(ip);
        pods.set(ip, {
          token: body.accessToken ?? "",
          envVars: body.envVars ?? {},
          inits: (prev?.inits ?? 0) + 1,
        });
        res.writeHead(204).end();
        return;
      }
      const pod = pods.get(ip);
      if (req.method === "GET" && req.url === "/envs") {
        if (!pod || req.headers["x-access-token"] !== pod.token) {
          res.writeHead(401).end();
          return;
        }
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(pod.envVars));
        return;
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
  return { port: (server.address() as AddressInfo).port, server };
}
