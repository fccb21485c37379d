import type { V1Pod } from "@kubernetes/client-node";
import type { Tenant } from "../../lib/claims/api-keys.ts";
import { isOwnSandbox, type SandboxView, sandboxView } from "../../lib/claims/sandbox-view.ts";
import { SANDBOX_PHASE } from "../../lib/crd/keys.ts";
import { KubeError, orMissing } from "../../lib/kube/errors.ts";
import { incarnationOf } from "../../lib/lifecycle/incarnation.ts";
import { claimCuts, ranAtClaim, startedMs } from "../../lib/logs/claim-cut.ts";
import {
  type ContainerRead,
  containerEntries,
  containerLogQuery,
  filledLimit,
} from "../../lib/logs/container-lines.ts";
import type { LogEntry, LogTime } from "../../lib/logs/log-entry.ts";
import {
  completeLines,
  filesToRead,
  isOnVolume,
  RUNTIME_FILE_BYTES,
  type RuntimeFile,
  runtimeEntries,
  runtimeReadFrom,
} from "../../lib/logs/runtime-lines.ts";
import { parseTime } from "../../lib/util/time.ts";
import { findSandbox } from "../api/find-sandbox.ts";
import type { HostDeps } from "../host-deps.ts";
import { type EnvdFiles, envdFiles } from "./envd-files.ts";

/**
 * LogTarget is a sandbox whose logs its owner may read: its pod, view, container, and the
 * instants its lines start (claimCuts): `claim` for its LogDir files (the claim, or the end of its
 * second when the container ran before it), `cut` for its container's log (the same, except that
 * a container started after the claim is not cut, whatever the node's clock says).
 */
export interface LogTarget {
  pod: V1Pod;
  view: SandboxView;
  claim: LogTime;
  cut: LogTime;
  /** container is the sandbox's main container (the pod's first). */
  container: string;
}

/**
 * findLogTarget finds sandbox `id` for a logs call: the tenant's own (isOwnSandbox: an admin key
 * is refused like a stranger, as for envd's token, since the logs are what runs inside), starting
 * or running, with a claim time. Undefined otherwise: the caller answers 404 either way.
 */
export async function findLogTarget(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
): Promise<LogTarget | undefined> {
  const pod = await findSandbox(deps, tenant, id);
  const view = pod && sandboxView(pod, deps.now());
  if (!pod || !view || !isOwnSandbox(view, tenant)) return undefined;
  if (view.phase !== SANDBOX_PHASE.STARTING && view.phase !== SANDBOX_PHASE.RUNNING) return undefined;
  const claimed = parseTime(view.claimedAt);
  const container = pod.spec?.containers?.[0]?.name;
  if (!claimed || !container) return undefined;
  const cuts = claimCuts(claimed.getTime(), startedMs(pod, container), ranAtClaim(pod, container));
  return { pod, view, claim: { ms: cuts.claim, ns: 0 }, cut: { ms: cuts.container, ns: 0 }, container };
}

/** ContainerLines are the entries of one read and whether it filled its bytes (its end may be missing). */
export interface ContainerLines {
  entries: LogEntry[];
  truncated: boolean;
}

/**
 * readContainerEntries reads the sandbox container's lines since its claim through the apiserver
 * (`pods/log`, one read bounded by `read`: containerLogQuery). A container not started yet (400)
 * or a pod gone meanwhile (404) has no lines; any other failure rejects.
 */
export async function readContainerEntries(
  deps: Pick<HostDeps, "kube">,
  t: LogTarget,
  read: ContainerRead,
): Promise<ContainerLines> {
  const { namespace, pod } = t.view;
  const text = await deps.kube
    .readPodLog(namespace, pod, containerLogQuery(t.container, t.cut.ms, read))
    .catch((e: unknown) => {
      if (e instanceof KubeError && (e.status === 400 || e.status === 404)) return "";
      throw e;
    });
  const truncated = filledLimit(text, read.bytes);
  const fields = { source: "container", container: t.container };
  return { entries: containerEntries(text, t.cut, truncated, fields), truncated };
}

/** RuntimeReader reads a sandbox's LogDir files: listing them, then each from where it was left. */
export interface RuntimeReader {
  files: EnvdFiles;
  logDirs: string[];
  /** offsets: how far each file has been read (bytes of complete lines). */
  offsets: Map<string, number>;
}

/**
 * runtimeReader is the reader of the sandbox's runtimes' LogDirs (its pool's `runtimes[].logDir`,
 * copied from its template), or undefined when it has none or the host cannot reach envd as the
 * owner (no sealing key) or the pod has no IP yet.
 */
export async function runtimeReader(
  deps: Pick<HostDeps, "kube" | "postStart" | "envdPort">,
  t: LogTarget,
): Promise<RuntimeReader | undefined> {
  const ip = t.pod.status?.podIP;
  if (!deps.postStart || !ip) return undefined;
  const pool = await orMissing(deps.kube.getPool(t.view.namespace, t.view.pool, { cached: true }));
  const logDirs = [...new Set((pool?.spec?.runtimes ?? []).flatMap((r) => (r.logDir ? [r.logDir] : [])))];
  if (logDirs.length === 0) return undefined;
  return {
    files: envdFiles(deps.postStart, t.view.sandboxId, ip, deps.envdPort, incarnationOf(t.pod)),
    logDirs,
    offsets: new Map(),
  };
}

/** listRuntimeFiles lists the files of every LogDir (a file itself, or the files in a directory). */
async function listRuntimeFiles(r: RuntimeReader): Promise<RuntimeFile[]> {
  const found = await Promise.all(
    r.logDirs.map(async (path) => {
      const entry = await r.files.stat(path);
      if (!entry) return [];
      return entry.dir ? r.files.list(path) : [entry];
    }),
  );
  return found.flat();
}

/**
 * readRuntimeEntries reads what is new in the sandbox's LogDir files since the reader's last read
 * (on the first, each file's newest RUNTIME_FILE_BYTES), as entries since the claim, and moves
 * the reader's offsets past the complete lines read. envd failing (not up yet, a file gone) gives
 * what could be read, and a debug line: the container's log still answers.
 */
export async function readRuntimeEntries(
  deps: Pick<HostDeps, "log">,
  t: LogTarget,
  r: RuntimeReader,
): Promise<LogEntry[]> {
  const main = t.pod.spec?.containers?.[0];
  const failed = (e: unknown): LogEntry[] => {
    deps.log.debug({ sandbox: t.view.sandboxId, err: String(e) }, "cannot read the sandbox's runtime logs");
    return [];
  };
  const listed = await listRuntimeFiles(r).catch((e: unknown): RuntimeFile[] => {
    failed(e);
    return [];
  });
  const parts = await Promise.all(
    filesToRead(listed, t.claim.ms).map(async (file) => {
      const offset = r.offsets.get(file.path);
      if (offset === file.size) return [];
      const { from, atLineStart } = runtimeReadFrom(file.size, offset);
      try {
        const { bytes, start } = await r.files.read(file.path, from, RUNTIME_FILE_BYTES);
        const { text, used } = completeLines(bytes);
        r.offsets.set(file.path, start + used);
        const onVolume = isOnVolume(main, file.path);
        return runtimeEntries({ text, atLineStart: atLineStart && start === from, file, onVolume }, t.claim);
      } catch (e) {
        return failed(e);
      }
    }),
  );
  return parts.flat();
}
