/**
 * files-http.ts serves envd's `/files`: GET downloads a file, POST uploads one (the body as
 * `application/octet-stream`, gzip allowed) or several (`multipart/form-data`, `file` parts named
 * by their path when no `path` parameter is given). Either needs the access token or a
 * signature over the path as given (auth.ts). Errors are envd's JSON `{code, message}` with the
 * HTTP status as code, which the SDK turns into its file errors.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { posix } from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { checkFileAuth } from "./auth.ts";
import { RpcError } from "./connect.ts";
import { resolve } from "./paths.ts";
import type { Sandbox } from "./pods.ts";

/** FileLimits bound uploads: a streamed body, and a multipart one (parsed in memory). */
export interface FileLimits {
  uploadBytes: number;
  multipartBytes: number;
}

/** HttpError is an answer of /files other than 200. */
class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const RPC_TO_HTTP: Partial<Record<RpcError["code"], number>> = {
  invalid_argument: 400,
  not_found: 404,
  permission_denied: 403,
};

function answerError(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res
    .writeHead(status, { "content-type": "application/json" })
    .end(JSON.stringify({ code: status, message }));
}

/** serveFiles answers GET and POST /files for a pod's sandbox. */
export async function serveFiles(
  req: IncomingMessage,
  res: ServerResponse,
  sbx: Sandbox,
  url: URL,
  limits: FileLimits,
): Promise<void> {
  const q = url.searchParams;
  const path = q.get("path") ?? undefined;
  const operation = req.method === "GET" ? "read" : "write";
  const token = req.headers["x-access-token"];
  const refused = checkFileAuth(
    sbx.token,
    {
      ...(typeof token === "string" ? { token } : {}),
      path: path ?? "",
      operation,
      ...optional("username", q.get("username")),
      ...optional("signature", q.get("signature")),
      ...optional("signatureExpiration", q.get("signature_expiration")),
    },
    Math.floor(Date.now() / 1000),
  );
  try {
    if (refused) throw new HttpError(401, refused);
    if (req.method === "GET") await download(res, sbx, path);
    else await upload(req, res, sbx, path, limits);
  } catch (e) {
    if (e instanceof HttpError) answerError(res, e.status, e.message);
    else if (e instanceof RpcError) answerError(res, RPC_TO_HTTP[e.code] ?? 500, e.message);
    else answerError(res, 500, e instanceof Error ? e.message : String(e));
  }
}

function optional<K extends string>(key: K, value: string | null): Partial<Record<K, string>> {
  return value === null ? {} : ({ [key]: value } as Record<K, string>);
}

async function download(res: ServerResponse, sbx: Sandbox, path: string | undefined): Promise<void> {
  if (!path) throw new HttpError(400, "path parameter is required");
  const { sbx: p, host } = await resolve(sbx.root, path);
  const st = await stat(host).catch(() => undefined);
  if (!st) throw new HttpError(404, `path '${p}' does not exist`);
  if (st.isDirectory()) throw new HttpError(400, `path '${p}' is a directory`);
  res.writeHead(200, {
    "content-type": "application/octet-stream",
    "content-length": String(st.size),
    "content-disposition": `attachment; filename*=UTF-8''${encodeURIComponent(posix.basename(p))}`,
  });
  await pipeline(createReadStream(host), res);
}

/** capped passes at most `max` bytes, failing with 413 beyond. */
function capped(max: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, next) {
      seen += chunk.length;
      next(seen > max ? new HttpError(413, `upload larger than ${max} bytes`) : null, chunk);
    },
  });
}

async function writeFile(sbx: Sandbox, path: string, body: Readable, max: number): Promise<object> {
  const { sbx: p, host } = await resolve(sbx.root, path);
  const st = await stat(host).catch(() => undefined);
  if (st?.isDirectory()) throw new HttpError(400, `path '${p}' is a directory`);
  await mkdir(posix.dirname(host), { recursive: true }).catch(() => {
    throw new HttpError(400, `cannot create the parent directories of '${p}'`);
  });
  await pipeline(body, capped(max), createWriteStream(host));
  return { name: posix.basename(p), type: "file", path: p };
}

async function upload(
  req: IncomingMessage,
  res: ServerResponse,
  sbx: Sandbox,
  path: string | undefined,
  limits: FileLimits,
): Promise<void> {
  const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  const written: object[] = [];
  if (type === "application/octet-stream") {
    if (!path) throw new HttpError(400, "path parameter is required for an octet-stream upload");
    const encoding = (req.headers["content-encoding"] ?? "identity").toLowerCase();
    if (encoding !== "identity" && encoding !== "gzip")
      throw new HttpError(400, `unsupported Content-Encoding ${encoding}`);
    const body = encoding === "gzip" ? req.pipe(createGunzip()) : req;
    written.push(await writeFile(sbx, path, body, limits.uploadBytes));
  } else if (type === "multipart/form-data") {
    const raw = Readable.toWeb(req.pipe(capped(limits.multipartBytes))) as ReadableStream<Uint8Array>;
    const form = await new Response(raw, { headers: { "content-type": String(req.headers["content-type"]) } })
      .formData()
      .catch((e: unknown) => {
        throw e instanceof HttpError ? e : new HttpError(400, "malformed multipart body");
      });
    for (const [field, value] of form.entries()) {
      if (field !== "file" || typeof value === "string") continue;
      const target = path ?? value.name;
      if (!target) throw new HttpError(400, "a file part needs a path (parameter or file name)");
      const body = Readable.fromWeb(value.stream() as import("node:stream/web").ReadableStream<Uint8Array>);
      written.push(await writeFile(sbx, target, body, limits.multipartBytes));
    }
    if (written.length === 0) throw new HttpError(400, "no file part in the multipart body");
  } else {
    throw new HttpError(
      400,
      `unsupported content type: ${type}, expected multipart/form-data or application/octet-stream`,
    );
  }
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(written));
}
