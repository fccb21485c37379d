import { readFileSync, statSync } from "node:fs";
import { connect } from "node:net";

/**
 * rawExchange writes `bytes` to a fresh TCP connection to 127.0.0.1:`port` and resolves with
 * everything that came back once the server closes it (send `Connection: close`, or a request it
 * refuses). A connection still open after `deadlineMs` is a failure, not a result.
 */
export function rawExchange(port: number, bytes: string | Buffer, deadlineMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(bytes));
    let got = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(`the router kept the connection open past ${deadlineMs} ms; got ${JSON.stringify(got)}`),
      );
    }, deadlineMs);
    socket.setEncoding("latin1");
    socket.on("data", (d: string) => {
      got += d;
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(got);
    });
  });
}

/** statuses are the status codes of the HTTP/1.x responses in a raw answer, in order. */
export function statuses(raw: string): number[] {
  return [...raw.matchAll(/(?:^|\r\n)HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
}

/** EnvdRecord is one request the envd stand-in received (its request log's RecordedRequest). */
export interface EnvdRecord {
  local: string;
  method: string;
  target: string;
  headers: Record<string, string | string[] | undefined>;
}

/** logSize is where the envd stand-in's request log ends now: read what follows with envdRequests. */
export function logSize(log: string): number {
  try {
    return statSync(log).size;
  } catch {
    return 0;
  }
}

/**
 * envdRequests are the requests the stand-in got on `podIP` since the log was `from` bytes long,
 * but the control plane's own (its /init, sent to the pod's address `podIP:envdPort` as Host):
 * what reached envd through the router, or past it.
 */
export function envdRequests(log: string, podIP: string, envdPort: number, from = 0): EnvdRecord[] {
  const text = readFileSync(log).subarray(from).toString("utf8");
  const own = `${podIP}:${envdPort}`;
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as EnvdRecord)
    .filter((r) => (r.local === podIP || r.local === `::ffff:${podIP}`) && r.headers.host !== own);
}

/** seen is each record's method and target, for comparing with what a client sent. */
export const seen = (records: EnvdRecord[]) => records.map((r) => `${r.method} ${r.target}`);
