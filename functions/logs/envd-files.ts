import { envdAccessToken } from "../../lib/claims/sealing.ts";
import type { RuntimeFile } from "../../lib/logs/runtime-lines.ts";
import type { PostStartDeps } from "../host-deps.ts";

/** ENVD_CALL_MS bounds each call to envd (a stat, a listing, one file's bytes). */
export const ENVD_CALL_MS = 5000;
/** WHOLE_FILE_BYTES: an envd that serves no ranges is read whole only up to this size. */
export const WHOLE_FILE_BYTES = 8 * 1024 * 1024;

/** EnvdFiles reads a sandbox's files through its envd, as its owner (the sandbox's access token). */
export interface EnvdFiles {
  /** stat is the entry at `path`: a file or a directory; undefined when there is none. */
  stat(path: string): Promise<(RuntimeFile & { dir: boolean }) | undefined>;
  /** list is the regular files directly in directory `path`. */
  list(path: string): Promise<RuntimeFile[]>;
  /** read gives the bytes of `path` from byte `from` (or its last `-from` bytes), at most `max`. */
  read(path: string, from: number, max: number): Promise<{ bytes: Uint8Array; start: number }>;
}

type Entry = { type?: string; path?: string; size?: string | number; modifiedTime?: string };

const fileOf = (e: Entry): RuntimeFile => ({
  path: e.path ?? "",
  size: Number(e.size ?? 0),
  modifiedMs: Date.parse(e.modifiedTime ?? "") || 0,
});

/** readCapped reads a body into at most `max` bytes, cancelling the rest. */
async function readCapped(body: ReadableStream<Uint8Array> | null, max: number): Promise<Uint8Array> {
  if (!body) return new Uint8Array();
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < max) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const out = new Uint8Array(Math.min(size, max));
  let at = 0;
  for (const c of chunks) {
    const part = c.subarray(0, out.length - at);
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * envdFiles reaches the envd of sandbox `id` at `ip:port` with the sandbox's access token
 * (recomputed from the sealing key, as the post-start hook sent it): Connect's JSON unary calls
 * `filesystem.Filesystem/Stat` and `/ListDir`, and `GET /files` with a Range (the real envd
 * serves ranges; one that does not is read whole up to WHOLE_FILE_BYTES). Every call is bounded
 * by ENVD_CALL_MS; the token is sent, never logged or put in an error.
 */
export function envdFiles(
  deps: PostStartDeps,
  id: string,
  ip: string,
  port: number,
  incarnation = 0,
): EnvdFiles {
  const base = `http://${ip.includes(":") ? `[${ip}]` : ip}:${port}`;
  const token = () => envdAccessToken(deps.keys, id, incarnation);
  const rpc = async (method: string, body: unknown): Promise<Record<string, unknown> | undefined> => {
    const res = await deps.fetch(`${base}/filesystem.Filesystem/${method}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "connect-protocol-version": "1",
        "x-access-token": await token(),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(ENVD_CALL_MS),
    });
    const text = new TextDecoder().decode(await readCapped(res.body, 4 * 1024 * 1024));
    if (res.ok) return JSON.parse(text) as Record<string, unknown>;
    if (res.status === 404) return undefined;
    const code = (() => {
      try {
        return (JSON.parse(text) as { code?: string }).code;
      } catch {
        return undefined;
      }
    })();
    if (code === "not_found") return undefined;
    throw new Error(`envd ${method} answered ${res.status}${code ? ` (${code})` : ""}`);
  };
  return {
    async stat(path) {
      const answer = await rpc("Stat", { path });
      const entry = answer?.entry as Entry | undefined;
      return entry ? { ...fileOf(entry), dir: entry.type === "FILE_TYPE_DIRECTORY" } : undefined;
    },
    async list(path) {
      const answer = await rpc("ListDir", { path, depth: 1 });
      const entries = (answer?.entries ?? []) as Entry[];
      return entries.filter((e) => e.type === "FILE_TYPE_FILE").map(fileOf);
    },
    async read(path, from, max) {
      const range = from < 0 ? `bytes=${from}` : `bytes=${from}-${from + max - 1}`;
      const res = await deps.fetch(`${base}/files?path=${encodeURIComponent(path)}`, {
        headers: { "x-access-token": await token(), range },
        signal: AbortSignal.timeout(ENVD_CALL_MS),
      });
      if (res.status === 416) {
        await res.body?.cancel();
        return { bytes: new Uint8Array(), start: Math.max(from, 0) };
      }
      if (res.status === 206) {
        const start = Number(/bytes (\d+)-/.exec(res.headers.get("content-range") ?? "")?.[1] ?? 0);
        return { bytes: await readCapped(res.body, max), start };
      }
      if (!res.ok) {
        await res.body?.cancel();
        throw new Error(`envd GET /files answered ${res.status}`);
      }
      // No ranges: the whole file, when it is small enough to read for a part of it.
      const length = Number(res.headers.get("content-length") ?? Number.NaN);
      if (!(length <= WHOLE_FILE_BYTES)) {
        await res.body?.cancel();
        throw new Error(`envd served ${path} whole (${length} bytes) without a range`);
      }
      const whole = await readCapped(res.body, WHOLE_FILE_BYTES);
      const start = from < 0 ? Math.max(0, whole.length + from) : Math.min(from, whole.length);
      return { bytes: whole.subarray(start, start + max), start };
    },
  };
}
