/**
 * filesystem-service.ts serves `filesystem.Filesystem` (Stat, ListDir, MakeDir, Move, Remove,
 * WatchDir) on the sandbox's directory; every path goes through paths.ts, so nothing outside
 * the sandbox is read, listed, moved or watched. Errors use envd's codes: not_found for a
 * missing path, already_exists for MakeDir of an existing directory, invalid_argument for the
 * wrong kind of entry.
 */
import { type FSWatcher, watch } from "node:fs";
import { lstat, mkdir, readdir, readlink, rename, rm, stat } from "node:fs/promises";
import { posix } from "node:path";
import { RpcError } from "./connect.ts";
import { type EntryInfo, type EventType, entryInfo, requiredString } from "./messages.ts";
import { hostPath, resolve, USER } from "./paths.ts";
import type { Sandbox } from "./pods.ts";
import type { Method, StreamContext } from "./rpc.ts";

type Msg = Record<string, unknown>;

/** MAX_ENTRIES bounds one ListDir answer. */
const MAX_ENTRIES = 10_000;
const NAMES = { owner: USER, group: USER };

/** errnoToRpc gives a filesystem error its Connect code. */
function errnoToRpc(e: unknown, sbxPath: string): unknown {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === "ENOENT") return new RpcError("not_found", `path '${sbxPath}' does not exist`);
  if (code === "ENOTDIR")
    return new RpcError("invalid_argument", `a parent of '${sbxPath}' is not a directory`);
  if (code === "EEXIST" || code === "ENOTEMPTY")
    return new RpcError("already_exists", `path '${sbxPath}' exists`);
  if (code === "EACCES" || code === "EPERM")
    return new RpcError("permission_denied", `permission denied: '${sbxPath}'`);
  return e;
}

/** info stats a sandbox path (not following a final symlink). */
export async function info(sbx: Sandbox, sbxPath: string): Promise<EntryInfo> {
  const host = hostPath(sbx.root.dir, sbxPath);
  const st = await lstat(host).catch((e: unknown) => {
    throw errnoToRpc(e, sbxPath);
  });
  const target = st.isSymbolicLink() ? await readlink(host).catch(() => undefined) : undefined;
  return entryInfo(sbxPath, st, NAMES, target);
}

async function listDir(sbx: Sandbox, msg: Msg): Promise<{ entries: EntryInfo[] }> {
  const { sbx: dir, host } = await resolve(sbx.root, requiredString(msg, "path"));
  const depth = msg.depth === undefined ? 1 : Number(msg.depth);
  if (!Number.isInteger(depth) || depth < 1)
    throw new RpcError("invalid_argument", "depth: must be at least 1");
  const st = await stat(host).catch((e: unknown) => {
    throw errnoToRpc(e, dir);
  });
  if (!st.isDirectory()) throw new RpcError("invalid_argument", `path '${dir}' is not a directory`);
  const entries: EntryInfo[] = [];
  const walk = async (at: string, level: number): Promise<void> => {
    for (const name of (await readdir(hostPath(sbx.root.dir, at))).sort()) {
      if (entries.length >= MAX_ENTRIES)
        throw new RpcError(
          "resource_exhausted",
          `more than ${MAX_ENTRIES} entries; list with a smaller depth`,
        );
      const entry = await info(sbx, posix.join(at, name)).catch(() => undefined);
      if (!entry) continue;
      entries.push(entry);
      if (entry.type === "FILE_TYPE_DIRECTORY" && level < depth) await walk(entry.path, level + 1);
    }
  };
  await walk(dir, 1);
  return { entries };
}

async function makeDir(sbx: Sandbox, msg: Msg): Promise<{ entry: EntryInfo }> {
  const { sbx: dir, host } = await resolve(sbx.root, requiredString(msg, "path"));
  const existing = await stat(host).catch(() => undefined);
  if (existing?.isDirectory()) throw new RpcError("already_exists", `directory '${dir}' already exists`);
  if (existing) throw new RpcError("invalid_argument", `path '${dir}' already exists and is not a directory`);
  await mkdir(host, { recursive: true }).catch((e: unknown) => {
    throw errnoToRpc(e, dir);
  });
  return { entry: await info(sbx, dir) };
}

async function move(sbx: Sandbox, msg: Msg): Promise<{ entry: EntryInfo }> {
  const from = await resolve(sbx.root, requiredString(msg, "source"));
  const to = await resolve(sbx.root, requiredString(msg, "destination"));
  await lstat(from.host).catch((e: unknown) => {
    throw errnoToRpc(e, from.sbx);
  });
  await mkdir(posix.dirname(to.host), { recursive: true });
  await rename(from.host, to.host).catch((e: unknown) => {
    throw errnoToRpc(e, to.sbx);
  });
  return { entry: await info(sbx, to.sbx) };
}

async function remove(sbx: Sandbox, msg: Msg): Promise<Record<string, never>> {
  const { sbx: p, host } = await resolve(sbx.root, requiredString(msg, "path"));
  if (p === "/") throw new RpcError("permission_denied", "cannot remove the sandbox's root");
  await lstat(host).catch((e: unknown) => {
    throw errnoToRpc(e, p);
  });
  await rm(host, { recursive: true, force: true });
  return {};
}

/** watchDir streams the changes under a directory until the client or the sandbox ends it. */
async function watchDir(sbx: Sandbox, msg: Msg, ctx: StreamContext): Promise<void> {
  const { sbx: dir, host } = await resolve(sbx.root, requiredString(msg, "path"));
  const st = await stat(host).catch((e: unknown) => {
    throw errnoToRpc(e, dir);
  });
  if (!st.isDirectory()) throw new RpcError("invalid_argument", `path '${dir}' is not a directory`);
  if (sbx.watchers >= sbx.limits.watchers)
    throw new RpcError("resource_exhausted", `at most ${sbx.limits.watchers} watchers per sandbox`);
  sbx.watchers += 1;
  let watcher: FSWatcher | undefined;
  try {
    // Events are typed one after another (a rename needs an lstat), so they keep their order.
    let order = Promise.resolve();
    await new Promise<void>((done, fail) => {
      watcher = watch(host, { recursive: msg.recursive === true }, (kind, name) => {
        if (!name) return;
        order = order
          .then(() => eventType(kind, posix.join(host, name)))
          .then((type) => ctx.send({ filesystem: { name, type } }));
      });
      watcher.on("error", (e) => fail(errnoToRpc(e, dir)));
      ctx.send({ start: {} });
      const close = () => done();
      sbx.closers.add(close);
      ctx.signal.addEventListener("abort", () => {
        sbx.closers.delete(close);
        done();
      });
    });
  } finally {
    watcher?.close();
    sbx.watchers -= 1;
  }
}

/** eventType maps fs.watch's two kinds onto envd's: a rename is a create or a remove. */
async function eventType(kind: string, host: string): Promise<EventType> {
  if (kind === "change") return "EVENT_TYPE_WRITE";
  return (await lstat(host).catch(() => undefined)) ? "EVENT_TYPE_CREATE" : "EVENT_TYPE_REMOVE";
}

/** filesystemMethods are the `filesystem.Filesystem` RPCs, by path. */
export const filesystemMethods: Record<string, Method> = {
  "/filesystem.Filesystem/Stat": {
    kind: "unary",
    handle: async (sbx, msg) => ({
      entry: await info(sbx, (await resolve(sbx.root, requiredString(msg, "path"))).sbx),
    }),
  },
  "/filesystem.Filesystem/ListDir": { kind: "unary", handle: listDir },
  "/filesystem.Filesystem/MakeDir": { kind: "unary", handle: makeDir },
  "/filesystem.Filesystem/Move": { kind: "unary", handle: move },
  "/filesystem.Filesystem/Remove": { kind: "unary", handle: remove },
  "/filesystem.Filesystem/WatchDir": {
    kind: "server_streaming",
    keepalive: { keepalive: {} },
    handle: watchDir,
  },
};
