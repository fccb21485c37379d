import type { Tenant } from "../../lib/claims/api-keys.ts";
import { KubeError } from "../../lib/kube/errors.ts";
import { CONTAINER_TAIL_LINES, FOLLOW_READ_BYTES } from "../../lib/logs/container-lines.ts";
import { type FollowMark, markAfter, newSince } from "../../lib/logs/follow-mark.ts";
import { compareLogTime, type LogEntry } from "../../lib/logs/log-entry.ts";
import { logPage, type PageQuery } from "../../lib/logs/log-page.ts";
import { FOLLOW_MAX_FAILURES, failedReads, followFailure } from "../../lib/logs/read-failures.ts";
import type { HostDeps } from "../host-deps.ts";
import { readContainerPage } from "./container-page.ts";
import {
  findLogTarget,
  type LogTarget,
  type RuntimeReader,
  readContainerEntries,
  readRuntimeEntries,
  runtimeReader,
} from "./log-sources.ts";

/**
 * readLogPage reads one page of sandbox `id`'s logs for `tenant`: its container's lines since
 * its claim and its runtimes' LogDir files, merged and paged as E2B pages them (logPage).
 * Undefined when the tenant may not read them (findLogTarget): the caller answers 404.
 */
export async function readLogPage(
  deps: HostDeps,
  tenant: Tenant,
  id: string,
  q: PageQuery,
): Promise<LogEntry[] | undefined> {
  const t = await findLogTarget(deps, tenant, id);
  if (!t) return undefined;
  const runtime = await runtimeReader(deps, t);
  const now = deps.now().getTime();
  const [container, files] = await Promise.all([
    readContainerPage(deps, t, q, now),
    runtime ? readRuntimeEntries(deps, t, runtime) : [],
  ]);
  return logPage([...container, ...files], q, now);
}

/** FOLLOW_POLL_MS is how often a follow reads the logs again. */
export const FOLLOW_POLL_MS = 1000;

/**
 * FollowEnd is why a follow ended: the sandbox was released, no line came, the client left, the
 * host stops, or the container's log could not be read FOLLOW_MAX_FAILURES times in a row
 * (`message` says why, without the error's own text).
 */
export type FollowEnd =
  | { end: "released" | "idle" | "closed" | "shutdown" }
  | { end: "error"; message: string };

/** MARK_TAIL_LINES is how many of the newest lines place a follow's start (lines sharing its last instant). */
const MARK_TAIL_LINES = 50;

/** FollowOptions: how long a follow may stay silent, how often it reads, and its caller's signal. */
export interface FollowOptions {
  idleMs: number;
  pollMs?: number;
  signal: AbortSignal;
}

/** pause waits `ms`, or less when a signal aborts. */
function pause(ms: number, signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const s of signals) s.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    for (const s of signals) s.addEventListener("abort", done, { once: true });
  });
}

/** sameSandbox: the target read again is still the sandbox being followed (same pod, same claim). */
const sameSandbox = (a: LogTarget, b: LogTarget | undefined) =>
  b !== undefined && b.pod.metadata?.uid === a.pod.metadata?.uid && b.view.claimedAt === a.view.claimedAt;

/**
 * followLogs sends the page `q` of the logs of `t` (a sandbox findLogTarget gave `tenant`, oldest
 * first) and then every new line as it appears (the page's level and search filters still
 * apply), reading the container's log and the LogDir files again every FOLLOW_POLL_MS: bounded
 * reads of the newest lines since the last one sent, so a stream costs one apiserver read (and
 * one envd listing) a second, and works the same on a Worker. It ends when the sandbox is
 * released or no longer the tenant's, when `idleMs` pass without a new line, when the caller's
 * signal aborts (the client left: nothing more is read), when the host stops, or with an error
 * after FOLLOW_MAX_FAILURES failed reads of the container's log in a row (a 403, an unreachable
 * kubelet: without it a lost log would end as "idle", as if the sandbox had gone quiet).
 */
export async function followLogs(
  deps: HostDeps,
  tenant: Tenant,
  t: LogTarget,
  q: PageQuery,
  send: (entries: LogEntry[]) => Promise<void>,
  o: FollowOptions,
): Promise<FollowEnd> {
  const id = t.view.sandboxId;
  const runtime: RuntimeReader | undefined = await runtimeReader(deps, t);
  const now = () => deps.now().getTime();
  // The page may stop short of the newest lines (a forward page, a backward one from a cursor):
  // the follow starts after the newest line there is now, read with the page, before it is sent.
  const tail = { tailLines: MARK_TAIL_LINES, bytes: FOLLOW_READ_BYTES };
  const [container, files, newest] = await Promise.all([
    readContainerPage(deps, t, q, now()),
    runtime ? readRuntimeEntries(deps, t, runtime) : [],
    readContainerEntries(deps, t, tail),
  ]);
  let mark: FollowMark = markAfter({ ms: t.cut.ms, ns: 0, sameInstant: 0 }, newest.entries);
  const page = logPage([...container, ...files], q, now());
  await send(q.direction === "backward" ? page.reverse() : page);
  const keep = (e: LogEntry) =>
    logPage([e], { direction: "forward", limit: 1, ...pick(q) }, now()).length === 1;
  let lastLine = now();
  let failures = 0;
  const signals = [o.signal, deps.stopping];
  while (true) {
    await pause(o.pollMs ?? FOLLOW_POLL_MS, signals);
    if (o.signal.aborted) return { end: "closed" };
    if (deps.stopping.aborted) return { end: "shutdown" };
    if (!sameSandbox(t, await findLogTarget(deps, tenant, id))) return { end: "released" };
    let status: number | undefined;
    const read = await readContainerEntries(deps, t, {
      from: mark.ms,
      tailLines: CONTAINER_TAIL_LINES,
      bytes: FOLLOW_READ_BYTES,
    }).then(
      (r) => r.entries,
      (e: unknown) => {
        status = e instanceof KubeError ? e.status : undefined;
        deps.log.debug({ sandbox: id, err: String(e) }, "a follow's read of the container log failed");
        return undefined;
      },
    );
    failures = failedReads(failures, read === undefined);
    if (failures >= FOLLOW_MAX_FAILURES) {
      deps.log.warn(
        { sandbox: id, status },
        "a logs follow ends: its reads of the container log keep failing",
      );
      return { end: "error", message: followFailure(failures, status) };
    }
    const fresh = newSince(read ?? [], mark);
    mark = markAfter(mark, fresh);
    const more = runtime ? await readRuntimeEntries(deps, t, runtime) : [];
    const out = [...fresh, ...more].filter(keep).sort(compareLogTime);
    if (out.length > 0) {
      lastLine = now();
      await send(out);
    } else if (read !== undefined && now() - lastLine >= o.idleMs) return { end: "idle" };
  }
}

/** pick is the filters of a page that also apply to followed lines. */
const pick = (q: PageQuery) => ({
  ...(q.level ? { level: q.level } : {}),
  ...(q.search ? { search: q.search } : {}),
});
