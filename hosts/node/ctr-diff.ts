// The containerd committer's hands on the node (functions/snapshots/containerd-committer.ts):
// run `ctr snapshots diff` on a container's active snapshot (the CRI plugin names it after the
// container) and spool the layer tar to a file, hashing it on the way, so the push knows the
// digest before it starts and ctr's failure is known before anything is pushed. An agent that
// dies mid-commit leaves its spool behind; the next one removes it at start (cleanSpool).
import { spawn } from "node:child_process";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, readdir, rm, rmdir } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { LayerDiffer } from "../../functions/snapshots/containerd-committer.ts";
import { OCI_MEDIA } from "../../lib/snapshots/image-build.ts";
import { hashingStream } from "./hashing-stream.ts";

/** SPOOL_PREFIX starts the name of each commit's spool directory in the tmp dir (mkdtemp adds 6 characters). */
export const SPOOL_PREFIX = "agentbox-snapshot-";
/** SPOOL_FILE is the one file a spool directory holds: the layer tar. */
export const SPOOL_FILE = "layer.tar";
/** SPOOL_DIR matches a spool directory's name exactly, as mkdtemp makes it. */
const SPOOL_DIR = new RegExp(`^${SPOOL_PREFIX}[A-Za-z0-9]{6}$`);

/** CtrDiffOptions name the node's ctr and containerd. */
export interface CtrDiffOptions {
  /** ctr is the path of containerd's ctr binary. */
  ctr: string;
  /** address is containerd's socket. */
  address: string;
  /** namespace is containerd's namespace of the kubelet's containers (default `k8s.io`). */
  namespace?: string;
  /** snapshotter is the CRI plugin's snapshotter (default `overlayfs`). */
  snapshotter?: string;
  /** tmpDir is where a layer is spooled (a directory on a disk with room for the largest change). */
  tmpDir: string;
  /** timeoutMs bounds one diff (default 10 min). */
  timeoutMs?: number;
}

/** ctrDiff is a LayerDiffer over containerd's ctr. */
export function ctrDiff(o: CtrDiffOptions): LayerDiffer {
  return async (id, signal) => {
    const dir = await mkdtemp(join(o.tmpDir, SPOOL_PREFIX));
    const path = join(dir, SPOOL_FILE);
    const dispose = () => rm(dir, { recursive: true, force: true });
    try {
      const out = await spool(o, id, path, signal);
      if ("gone" in out) await dispose();
      return "gone" in out ? out : { ...out, open: () => createReadStream(path), dispose };
    } catch (e) {
      await dispose();
      throw e;
    }
  };
}

/**
 * cleanSpool removes what commits of an earlier agent left in the tmp dir (it died mid-commit,
 * before its dispose): each spool directory (SPOOL_PREFIX and six characters) with its layer
 * file, and nothing else. A directory holding anything but SPOOL_FILE is not one a commit made
 * and is left, as is every other entry. Run at start, before any commit of this agent spools;
 * the tmp dir is the agent's own (--tmp-dir). A tmp dir that does not exist holds nothing.
 */
export async function cleanSpool(tmpDir: string): Promise<{ removed: string[]; left: string[] }> {
  const entries = await readdir(tmpDir, { withFileTypes: true }).catch((e: NodeJS.ErrnoException) =>
    e.code === "ENOENT" ? [] : Promise.reject(e),
  );
  const removed: string[] = [];
  const left: string[] = [];
  for (const entry of entries) {
    // lstat's view: a symlink named like a spool directory is not one.
    if (!entry.isDirectory() || !SPOOL_DIR.test(entry.name)) continue;
    const dir = join(tmpDir, entry.name);
    try {
      const names = await readdir(dir);
      if (names.some((n) => n !== SPOOL_FILE)) {
        left.push(dir);
        continue;
      }
      // No recursion: a SPOOL_FILE that is a directory is not a commit's and fails here.
      if (names.length > 0) await rm(join(dir, SPOOL_FILE));
      await rmdir(dir);
      removed.push(dir);
    } catch {
      left.push(dir);
    }
  }
  return { removed, left };
}

/** spool runs ctr and writes its stdout to `path`, answering the digest and size, or `gone`. */
async function spool(
  o: CtrDiffOptions,
  id: string,
  path: string,
  signal: AbortSignal,
): Promise<{ digest: string; size: number } | { gone: string }> {
  const args = [
    "--address",
    o.address,
    "--namespace",
    o.namespace ?? "k8s.io",
    "snapshots",
    "--snapshotter",
    o.snapshotter ?? "overlayfs",
    "diff",
    "--media-type",
    OCI_MEDIA.layer,
    id,
  ];
  const timeoutMs = o.timeoutMs ?? 600_000;
  const bounded = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
  const child = spawn(o.ctr, args, {
    stdio: ["ignore", "pipe", "pipe"],
    signal: bounded,
    killSignal: "SIGKILL",
  });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => {
    stderr = (stderr + c.toString("utf8")).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", resolve);
  });
  const counting = hashingStream();
  let code: number | null;
  try {
    [, code] = await Promise.all([pipeline(child.stdout, counting.stream, createWriteStream(path)), exited]);
  } catch (e) {
    if (signal.aborted) throw new Error(`ctr snapshots diff ${id}: aborted`);
    if (bounded.aborted) throw new Error(`ctr snapshots diff ${id}: no end within ${timeoutMs} ms`);
    if ((e as NodeJS.ErrnoException).code === "ENOENT") throw new Error(`cannot run ${o.ctr}: ${String(e)}`);
    throw new Error(`ctr snapshots diff ${id}: ${String(e)}`);
  }
  const why = ctrError(stderr) || `ctr exited ${code}`;
  if (code === 0) return { digest: counting.digest(), size: counting.size() };
  if (/not found|does not exist/i.test(why)) return { gone: why };
  throw new Error(`ctr snapshots diff ${id} exited ${code}: ${why}`);
}

/**
 * ctrError is what ctr said went wrong: its `ctr: ...` lines, without the daemon-style log lines
 * it prints besides (deprecation warnings), or all of stderr when it has no such line.
 */
function ctrError(stderr: string): string {
  const lines = stderr.split("\n").map((l) => l.trim());
  const own = lines.filter((l) => l.startsWith("ctr: "));
  return (own.length > 0 ? own : lines.filter((l) => l && !/^time="[^"]*" level=/.test(l))).join("; ");
}
