// A runtime's LogDir files (SandboxRuntimeSpec.logDir, read through envd): which files to read,
// which part of each, and their lines as entries since the sandbox's claim.
import type { V1Container } from "@kubernetes/client-node";
import { compareLogTime, formatLogTime, type LogEntry, type LogTime } from "./log-entry.ts";
import { readLine } from "./read-line.ts";

/** RUNTIME_FILE_BYTES bounds the bytes read of one file (its newest part); RUNTIME_FILES the files. */
export const RUNTIME_FILE_BYTES = 1024 * 1024;
export const RUNTIME_FILES = 16;

/** RuntimeFile is a file as envd lists it: its path, size (bytes) and modification time (ms). */
export interface RuntimeFile {
  path: string;
  size: number;
  modifiedMs: number;
}

/**
 * filesToRead picks the LogDir files worth reading: regular files modified at or after the claim
 * (one untouched since holds no line of this sandbox), at most RUNTIME_FILES, by path.
 */
export function filesToRead(files: readonly RuntimeFile[], claimMs: number): RuntimeFile[] {
  return files
    .filter((f) => f.modifiedMs >= Math.floor(claimMs / 1000) * 1000)
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    .slice(0, RUNTIME_FILES);
}

/** isOnVolume: `path` lies in a volume mounted into the container, which outlives the container. */
export function isOnVolume(container: Pick<V1Container, "volumeMounts"> | undefined, path: string): boolean {
  return (container?.volumeMounts ?? []).some((m) => {
    const at = m.mountPath.replace(/\/+$/, "");
    return path === at || path.startsWith(`${at}/`) || at === "";
  });
}

/**
 * completeLines splits bytes read from a file at its last newline: the text of the complete
 * lines and how many bytes they took (a line still being written waits for the next read).
 */
export function completeLines(bytes: Uint8Array): { text: string; used: number } {
  const end = bytes.lastIndexOf(0x0a);
  if (end < 0) return { text: "", used: 0 };
  return { text: new TextDecoder().decode(bytes.subarray(0, end + 1)), used: end + 1 };
}

/** RuntimeText is part of one file: its text, whether it starts at a line's start, and the file. */
export interface RuntimeText {
  text: string;
  /** atLineStart: the text starts at the file's start or just after a newline. */
  atLineStart: boolean;
  file: RuntimeFile;
  /** onVolume: the file lives on a volume (isOnVolume), so it may hold an earlier container's lines. */
  onVolume: boolean;
}

/**
 * runtimeEntries reads a LogDir file's text into entries, in file order. A line that carries a
 * time (a JSON time field, a leading RFC 3339 stamp) has it; a line that does not takes the time
 * of the last line before it that did, or else the file's modification time (its newest possible
 * time). Lines stamped before the claim are left out, and on a volume, which outlives containers,
 * so are lines that carry no time of their own: nothing tells whose they are. A first line cut
 * by a ranged read (`atLineStart` false) is dropped.
 */
export function runtimeEntries(part: RuntimeText, claim: LogTime): LogEntry[] {
  const lines = part.text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  if (!part.atLineStart) lines.shift();
  const fields = { source: "runtime", file: part.file.path };
  let carried: LogTime = { ms: part.file.modifiedMs, ns: 0 };
  const out: LogEntry[] = [];
  for (const raw of lines) {
    const line = raw.replace(/\r$/, "");
    if (line === "") continue;
    const facts = readLine(line);
    if (facts.time) carried = facts.time;
    else if (part.onVolume) continue;
    if (compareLogTime(carried, claim) < 0) continue;
    out.push({
      ...carried,
      timestamp: formatLogTime(carried),
      level: facts.level,
      message: facts.message,
      line,
      fields: { ...facts.fields, ...fields },
    });
  }
  return out;
}

/**
 * runtimeReadFrom is where the next read of a file of `size` bytes starts: after what was read
 * already (`offset`), or at the file's start for a file not read yet; never more than `max` bytes
 * before its end (older bytes are skipped, and the cut line with them), and at the start again
 * when the file shrank below the offset (truncated or replaced). `atLineStart` says whether the
 * read starts at a line's start.
 */
export function runtimeReadFrom(
  size: number,
  offset: number | undefined,
  max = RUNTIME_FILE_BYTES,
): { from: number; atLineStart: boolean } {
  const at = offset === undefined || offset > size ? 0 : offset;
  return size - at > max ? { from: size - max, atLineStart: false } : { from: at, atLineStart: true };
}
