// The sandbox side of `npm run bench:dataplane`, in a process of its own so its CPU is neither the
// router's nor the load generator's: the envd stand-in every kwok pod's IP reaches (as `npm start`
// and the tests run it), and a server the bench owns on the same addresses that holds each
// response open after its first line, as a sandbox's long stream does. The parent forks it, reads
// `{ready, envdPort, holdPort}`, then asks over IPC: "held" (how many responses are open now),
// "release" (end them all), "close".
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { startEnvd } from "../infra/dev/envd/server.ts";

/** PodRequest is what the parent asks; each answer echoes its id. */
type PodRequest = { id: number; op: "held" | "release" | "close" };

if (!process.send) throw new Error("dataplane-pod: no IPC channel");
const send = (m: unknown) => process.send?.(m);
const envd = await startEnvd();
const held = new Set<ServerResponse>();
const hold = createServer((req, res) => {
  req.resume();
  // Connection: close, so the router's upstream connection goes with the stream: each round
  // starts from no pooled connections, and RSS growth is what open streams cost.
  res.writeHead(200, { "content-type": "text/plain", connection: "close" });
  res.write("open\n");
  held.add(res);
  res.once("close", () => held.delete(res));
});
// A held response has no timeout of its own; the socket stays for as long as the bench holds it.
hold.requestTimeout = 0;
hold.maxConnections = 5_000;
await new Promise<void>((resolve) => hold.listen({ port: 0, host: "0.0.0.0", backlog: 2_048 }, resolve));

process.on("message", async (m: PodRequest) => {
  try {
    if (m.op === "held") send({ id: m.id, held: held.size });
    else if (m.op === "release") {
      for (const res of held) res.end("closed\n");
      send({ id: m.id });
    } else {
      // Closing envd's server ends its sandboxes and removes their files (the process then exits
      // once that is done and the IPC channel is gone).
      hold.closeAllConnections();
      envd.server.closeAllConnections();
      await Promise.all([new Promise((r) => hold.close(r)), new Promise((r) => envd.server.close(r))]);
      send({ id: m.id });
      process.disconnect();
    }
  } catch (e) {
    send({ id: m.id, error: String(e) });
  }
});
send({ ready: true, envdPort: envd.port, holdPort: (hold.address() as AddressInfo).port });
