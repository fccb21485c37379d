import { connect, createServer, type Server, type Socket } from "node:net";

/** CONNECT_MS bounds one connection attempt to a backend. */
const CONNECT_MS = 2000;

/** Service is a loopback TCP proxy that spreads connections over the ports of the hosts serving. */
export interface Service {
  close(): Promise<void>;
}

/**
 * startService stands in for a Kubernetes Service in front of several hosts: it listens on
 * 127.0.0.1:`port` and hands each connection, as bytes (TLS passes through: every host serves
 * the same certificate), to the next of `backends()` in turn, trying the others when a backend
 * refuses, as kube-proxy skips an endpoint that is gone. A connection cut by its backend's death
 * is cut for the caller too (the apiserver retries or drops the call, as in a cluster).
 */
export function startService(port: number, backends: () => number[]): Promise<Service> {
  let next = 0;
  const open = new Set<Socket>();
  const track = (s: Socket) => {
    open.add(s);
    s.once("close", () => open.delete(s));
  };
  const dial = (ports: number[], first: number, attempt: number, done: (s: Socket | undefined) => void) => {
    const target = ports[(first + attempt) % ports.length];
    if (target === undefined || attempt >= ports.length) return done(undefined);
    const up = connect({ host: "127.0.0.1", port: target, timeout: CONNECT_MS });
    const fail = () => {
      up.destroy();
      dial(ports, first, attempt + 1, done);
    };
    up.once("error", fail);
    up.once("timeout", fail);
    up.once("connect", () => {
      up.off("error", fail);
      up.off("timeout", fail);
      up.setTimeout(0);
      done(up);
    });
  };
  const server: Server = createServer((down) => {
    track(down);
    down.pause();
    down.on("error", () => down.destroy());
    const ports = backends();
    const first = next++;
    dial(ports, first, 0, (up) => {
      if (!up || down.destroyed) {
        up?.destroy();
        down.destroy();
        return;
      }
      track(up);
      up.on("error", () => down.destroy());
      up.once("close", () => down.destroy());
      down.once("close", () => up.destroy());
      up.pipe(down);
      down.pipe(up);
      down.resume();
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () =>
      resolve({
        close: () =>
          new Promise<void>((r) => {
            for (const s of open) s.destroy();
            server.close(() => r());
          }),
      }),
    );
  });
}
