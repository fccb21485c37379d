/**
 * paths.ts maps the sandbox's view of paths (what the SDK sends: `/home/user/x`, `x`, `~/x`)
 * onto the sandbox's root directory on this machine, and keeps every file call inside it.
 * A sandbox path is absolute and normalized; relative paths and `~` resolve against the home
 * directory (`/home/user`), as envd resolves them against the user's home. A path whose `..`
 * would climb above the sandbox's `/` is refused; so is one whose existing part leads, through
 * a symlink, out of the root (checked on the real path by `confineReal`). The root may be `/`
 * itself (envd inside a container, container-main.ts): then a sandbox path is the host path.
 */
import { realpath } from "node:fs/promises";
import { posix, sep } from "node:path";
import { RpcError } from "./connect.ts";

/** HOME is the sandbox user's home directory, the default working directory. */
export const HOME = "/home/user";
/** USER is the sandbox user's name, reported as owner and in the command environment. */
export const USER = "user";

/**
 * sandboxPath normalizes a path the SDK sent into an absolute sandbox path, or throws
 * invalid_argument (empty, NUL) / permission_denied (climbs above `/`).
 */
export function sandboxPath(input: string, home = HOME): string {
  if (input.includes("\0")) throw new RpcError("invalid_argument", "path contains a NUL byte");
  let p = input === "" ? home : input;
  if (p === "~" || p.startsWith("~/")) p = home + p.slice(1);
  else if (p.startsWith("~"))
    throw new RpcError("invalid_argument", `cannot expand user-specific home dir in '${input}'`);
  if (!p.startsWith("/")) p = `${home}/${p}`;
  let depth = 0;
  for (const part of p.split("/")) {
    if (part === "" || part === ".") continue;
    depth += part === ".." ? -1 : 1;
    if (depth < 0) throw new RpcError("permission_denied", `path '${input}' escapes the sandbox`);
  }
  return posix.normalize(p).replace(/(.)\/$/, "$1");
}

/** hostPath is where a sandbox path lives under the sandbox's root directory. */
export function hostPath(root: string, sbxPath: string): string {
  if (root === sep) return sbxPath;
  return sbxPath === "/" ? root : `${root}${sbxPath}`;
}

/** within says whether a host path is root or lies under it (root "/" holds every absolute path). */
function within(root: string, host: string): boolean {
  return host === root || host.startsWith(root === sep ? sep : root + sep);
}

/** sandboxPathOf is the sandbox path of a host path under root (the inverse of hostPath). */
export function sandboxPathOf(root: string, host: string): string {
  if (host === root) return "/";
  if (!within(root, host)) throw new RpcError("permission_denied", "path escapes the sandbox");
  return host
    .slice(root === sep ? 0 : root.length)
    .split(sep)
    .join("/");
}

/**
 * confineReal checks that the deepest existing ancestor of a host path resolves (symlinks
 * followed) inside the real root; a symlink that leads out of the sandbox is permission_denied.
 */
export async function confineReal(realRoot: string, host: string): Promise<void> {
  let at = host;
  for (;;) {
    const real = await realpath(at).catch((e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT" || e.code === "ENOTDIR") return undefined;
      throw e;
    });
    if (real !== undefined) {
      if (!within(realRoot, real)) throw new RpcError("permission_denied", "path leads out of the sandbox");
      return;
    }
    const parent = at.slice(0, at.lastIndexOf(sep)) || sep;
    if (parent === at) return;
    at = parent;
  }
}

/** resolve turns an SDK path into its sandbox path and confined host path. */
export async function resolve(
  root: { dir: string; real: string },
  input: string,
): Promise<{ sbx: string; host: string }> {
  const sbx = sandboxPath(input);
  const host = hostPath(root.dir, sbx);
  await confineReal(root.real, host);
  return { sbx, host };
}
