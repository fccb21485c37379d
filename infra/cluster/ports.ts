import { createServer } from "node:net";

/**
 * freePorts asks the kernel for n distinct unused loopback ports. Another process could still
 * take one before we bind it; `up` retries the whole start on a bind failure, which keeps two
 * clusters started side by side from colliding.
 */
export async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<import("node:net").Server>((resolve, reject) => {
          const s = createServer();
          s.once("error", reject);
          s.listen(0, "127.0.0.1", () => resolve(s));
        }),
    ),
  );
  const ports = servers.map((s) => {
    const addr = s.address();
    if (addr === null || typeof addr === "string") throw new Error("unexpected server address");
    return addr.port;
  });
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  return ports;
}
