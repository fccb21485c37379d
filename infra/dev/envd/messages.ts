/**
 * messages.ts defines the part of envd's `process` and `filesystem` services the stand-in
 * serves, in their protobuf JSON form (lowerCamelCase fields, bytes as base64, int64 as strings,
 * enums by name, oneofs as one present field, Timestamps as RFC 3339). Written from what the SDK
 * sends and expects; decoders accept what protobuf JSON allows (enum names or numbers).
 */
import type { Stats } from "node:fs";
import { RpcError } from "./connect.ts";

/** ProcessConfig says what to run: `cmd` with `args`, extra `envs`, in `cwd`. */
export interface ProcessConfig {
  cmd: string;
  args: string[];
  envs: Record<string, string>;
  cwd?: string;
}

/** ProcessSelector names a process by pid or by tag. */
export type ProcessSelector = { pid: number } | { tag: string };

/** ProcessEvent is one message of a Start or Connect stream (`{event: ProcessEvent}`). */
export type ProcessEvent =
  | { start: { pid: number } }
  | { data: { stdout: string } | { stderr: string } | { pty: string } }
  | { end: { exitCode: number; exited: boolean; status: string; error?: string } }
  | { keepalive: Record<string, never> };

/** SIGNALS are the signals SendSignal accepts, by enum name and number. */
const SIGNALS: Record<string, NodeJS.Signals> = {
  SIGNAL_SIGTERM: "SIGTERM",
  "15": "SIGTERM",
  SIGNAL_SIGKILL: "SIGKILL",
  "9": "SIGKILL",
};

/** FileType names of EntryInfo.type. */
export type FileType = "FILE_TYPE_FILE" | "FILE_TYPE_DIRECTORY" | "FILE_TYPE_SYMLINK";

/** EventType names of FilesystemEvent.type. */
export type EventType =
  | "EVENT_TYPE_CREATE"
  | "EVENT_TYPE_WRITE"
  | "EVENT_TYPE_REMOVE"
  | "EVENT_TYPE_RENAME"
  | "EVENT_TYPE_CHMOD";

/** EntryInfo describes a file or directory; `path` is the sandbox's view of it. */
export interface EntryInfo {
  name: string;
  type: FileType;
  path: string;
  size: string;
  mode: number;
  permissions: string;
  owner: string;
  group: string;
  modifiedTime: string;
  symlinkTarget?: string;
}

function invalid(field: string, what: string): RpcError {
  return new RpcError("invalid_argument", `${field}: ${what}`);
}

/** str reads an optional string field. */
export function str(msg: Record<string, unknown>, field: string): string | undefined {
  const v = msg[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw invalid(field, "must be a string");
  return v;
}

/** obj reads an optional message field. */
export function obj(msg: Record<string, unknown>, field: string): Record<string, unknown> | undefined {
  const v = msg[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) throw invalid(field, "must be an object");
  return v as Record<string, unknown>;
}

/** requiredPath reads a non-empty `path`-like string field. */
export function requiredString(msg: Record<string, unknown>, field: string): string {
  const v = str(msg, field);
  if (!v) throw invalid(field, "is required");
  return v;
}

/** bytes reads a base64 bytes field (standard or URL alphabet, as protobuf JSON allows). */
export function bytes(msg: Record<string, unknown>, field: string): Buffer {
  const v = str(msg, field) ?? "";
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(v)) throw invalid(field, "must be base64");
  return Buffer.from(v, "base64");
}

/** processConfig reads StartRequest.process. */
export function processConfig(msg: Record<string, unknown>): ProcessConfig {
  const p = obj(msg, "process");
  if (!p) throw invalid("process", "is required");
  const cmd = requiredString(p, "cmd");
  const args = p.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === "string"))
    throw invalid("process.args", "must be a list of strings");
  const envs = obj(p, "envs") ?? {};
  for (const [k, v] of Object.entries(envs))
    if (typeof v !== "string") throw invalid(`process.envs.${k}`, "must be a string");
  const cwd = str(p, "cwd");
  return { cmd, args, envs: envs as Record<string, string>, ...(cwd ? { cwd } : {}) };
}

/** selector reads the `process` ProcessSelector of a request. */
export function selector(msg: Record<string, unknown>): ProcessSelector {
  const s = obj(msg, "process");
  const pid = s?.pid;
  if (typeof pid === "number" && Number.isInteger(pid) && pid > 0) return { pid };
  const tag = s && str(s, "tag");
  if (tag) return { tag };
  throw invalid("process", "needs a pid or a tag");
}

/** signalOf reads SendSignalRequest.signal. */
export function signalOf(msg: Record<string, unknown>): NodeJS.Signals {
  const s = SIGNALS[String(msg.signal)];
  if (!s) throw invalid("signal", `unsupported signal ${String(msg.signal)}`);
  return s;
}

/** endEvent describes how a child ended, in the words Go's os.ProcessState uses. */
export function endEvent(code: number | null, signal: NodeJS.Signals | null): ProcessEvent {
  if (code !== null) {
    const status = `exit status ${code}`;
    return { end: { exitCode: code, exited: true, status, ...(code !== 0 ? { error: status } : {}) } };
  }
  const status = `signal: ${signalWord(signal)}`;
  return { end: { exitCode: -1, exited: false, status, error: status } };
}

function signalWord(signal: NodeJS.Signals | null): string {
  if (signal === "SIGKILL") return "killed";
  if (signal === "SIGTERM") return "terminated";
  return String(signal ?? "unknown").toLowerCase();
}

/** permissionsString renders a mode as `drwxr-xr-x`, as envd does (Go's FileMode.String). */
export function permissionsString(mode: number, type: FileType): string {
  const lead = type === "FILE_TYPE_DIRECTORY" ? "d" : type === "FILE_TYPE_SYMLINK" ? "L" : "-";
  let out = lead;
  for (let shift = 6; shift >= 0; shift -= 3) {
    const bits = (mode >> shift) & 7;
    out += `${bits & 4 ? "r" : "-"}${bits & 2 ? "w" : "-"}${bits & 1 ? "x" : "-"}`;
  }
  return out;
}

/** fileTypeOf is the EntryInfo type of an lstat result (anything else counts as a file). */
export function fileTypeOf(st: Stats): FileType {
  if (st.isSymbolicLink()) return "FILE_TYPE_SYMLINK";
  if (st.isDirectory()) return "FILE_TYPE_DIRECTORY";
  return "FILE_TYPE_FILE";
}

/** entryInfo builds an EntryInfo from an lstat result and the sandbox path of the entry. */
export function entryInfo(
  sandboxPath: string,
  st: Stats,
  names: { owner: string; group: string },
  symlinkTarget?: string,
): EntryInfo {
  const type = fileTypeOf(st);
  const name = sandboxPath === "/" ? "/" : (sandboxPath.split("/").at(-1) ?? "");
  return {
    name,
    type,
    path: sandboxPath,
    size: String(st.size),
    mode: st.mode & 0o777,
    permissions: permissionsString(st.mode & 0o777, type),
    owner: names.owner,
    group: names.group,
    modifiedTime: st.mtime.toISOString(),
    ...(symlinkTarget !== undefined ? { symlinkTarget } : {}),
  };
}
