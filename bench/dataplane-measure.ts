// The load of `npm run bench:dataplane`, plain node:http so the client costs the same on every
// side: GET /health rotated between the router, envd direct and the control proxy, a large
// download streamed and discarded, and streams held open through the router. Every request has a
// deadline.
import { readdirSync, readFileSync } from "node:fs";
import { Agent, type ClientRequest, type IncomingMessage, request } from "node:http";

/** Target is where a side's requests go: an address, and the headers that route them. */
export interface Target {
  host: string;
  port: number;
  headers: Record<string, string>;
}

/** Side is where a request goes: the router, envd on the pod IP, or the minimal Node proxy. */
export type Side = "router" | "direct" | "control";

/** SIDES in the order the rotations start from. */
export const SIDES: readonly Side[] = ["router", "direct", "control"];

/** rotated is SIDES starting from the i-th (mod 3): each side goes first as often as the others. */
export const rotated = (i: number): Side[] => SIDES.map((_, k) => SIDES[(i + k) % SIDES.length] as Side);

/** REQUEST_MS bounds one short request; a download or a stream's opening gets DOWNLOAD_MS. */
const REQUEST_MS = 10_000;
const DOWNLOAD_MS = 120_000;

/** send issues one GET and resolves once its body ended: status, bytes, the response's time. */
function send(
  target: Target,
  path: string,
  agent: Agent | false,
  timeoutMs: number,
): Promise<{ status: number; bytes: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(
      { host: target.host, port: target.port, path, headers: target.headers, agent },
      (res) => {
        let bytes = 0;
        res.on("data", (c: Buffer) => {
          bytes += c.length;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, bytes, ms: performance.now() - started }));
        res.on("error", reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`GET ${path} took over ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

/** expectStatus fails the bench on an answer it did not expect (a refusal is not a figure). */
function expectStatus(what: string, got: number, want: number): void {
  if (got !== want) throw new Error(`${what}: status ${got}, expected ${want}`);
}

/**
 * healthLatencies sends n `GET /health` to each side over one kept-alive connection each,
 * rotating the sides (which goes first), after a warm-up; milliseconds per request.
 */
export async function healthLatencies(
  sides: Record<Side, Target>,
  n: number,
): Promise<Record<Side, number[]>> {
  const agent = () => new Agent({ keepAlive: true, maxSockets: 1 });
  const agents = { router: agent(), direct: agent(), control: agent() };
  const out: Record<Side, number[]> = { router: [], direct: [], control: [] };
  try {
    const once = async (side: Side) => {
      const r = await send(sides[side], "/health", agents[side], REQUEST_MS);
      expectStatus(`${side} GET /health`, r.status, 204);
      return r.ms;
    };
    for (let i = 0; i < 100; i++) for (const side of SIDES) await once(side);
    for (let i = 0; i < n; i++) for (const side of rotated(i)) out[side].push(await once(side));
    return out;
  } finally {
    for (const a of Object.values(agents)) a.destroy();
  }
}

/** download streams one GET on a connection of its own and discards it: bytes per second. */
export async function downloadRate(target: Target, path: string, size: number): Promise<number> {
  const r = await send(target, path, false, DOWNLOAD_MS);
  expectStatus(`GET ${path}`, r.status, 200);
  if (r.bytes !== size) throw new Error(`GET ${path}: ${r.bytes} bytes, expected ${size}`);
  return r.bytes / (r.ms / 1000);
}

/** Held is a set of streams open through the router. */
export interface Held {
  /** opened is how many streams have their response head and first line. */
  opened: number;
  /** openSeconds is how long opening them all took. */
  openSeconds: number;
  /** ended resolves once every stream has ended, and rejects when one fails or ms pass. */
  ended(ms: number): Promise<void>;
  /** destroy cuts every stream from the client side (cleanup after a failure). */
  destroy(): void;
}

/**
 * holdStreams opens n streams (a connection each) to target's path, `batch` at a time, and
 * resolves once every one has its response head and first line: n open at once.
 */
export async function holdStreams(target: Target, path: string, n: number, batch = 100): Promise<Held> {
  const requests: ClientRequest[] = [];
  const ends: Promise<void>[] = [];
  const open = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = request({ ...target, path, agent: false });
      requests.push(req);
      const timer = setTimeout(() => req.destroy(new Error("a stream did not open in time")), DOWNLOAD_MS);
      req.on("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
      req.on("response", (res: IncomingMessage) => {
        if (res.statusCode !== 200) {
          req.destroy(new Error(`a stream answered ${res.statusCode}`));
          return;
        }
        const end = new Promise<void>((done, failed) => {
          res.on("end", done);
          res.on("error", failed);
          res.on("close", () => {
            if (!res.complete) failed(new Error("a stream was cut"));
          });
        });
        // Read by ended(); a stream cut before anyone waits (cleanup) is no unhandled rejection.
        end.catch(() => {});
        ends.push(end);
        res.once("data", () => {
          clearTimeout(timer);
          resolve();
        });
      });
      req.end();
    });
  const started = performance.now();
  const destroy = () => {
    for (const r of requests) r.destroy();
  };
  try {
    for (let i = 0; i < n; i += batch)
      await Promise.all(Array.from({ length: Math.min(batch, n - i) }, open));
  } catch (e) {
    destroy();
    throw e;
  }
  const openSeconds = (performance.now() - started) / 1000;
  return {
    opened: ends.length,
    openSeconds,
    destroy,
    ended: (ms) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`streams still open after ${ms} ms`)), ms);
        Promise.all(ends).then(
          () => {
            clearTimeout(timer);
            resolve();
          },
          (e: unknown) => {
            clearTimeout(timer);
            reject(e);
          },
        );
      }),
  };
}

/** rssBytes is a process's resident set size now, from /proc/<pid>/status. */
export function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  return Number(line?.split(/\s+/)[1] ?? Number.NaN) * 1024;
}

/**
 * v8BackgroundSeconds is the CPU seconds a process's V8 platform threads (named "V8Worker":
 * concurrent GC marking and sweeping, background compiling) have used, from /proc/<pid>/task:
 * the part of a proxy's CPU that its heap's collections cost beside its own thread's.
 */
export function v8BackgroundSeconds(pid: number): number {
  let seconds = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      if (!stat.includes("(V8Worker)")) continue;
      const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
      seconds += (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return seconds;
}
