import {
  BACKWARD_FIRST,
  type BackwardOutcome,
  backwardOutcome,
  backwardSince,
  nextReach,
} from "../../lib/logs/backward-read.ts";
import { CONTAINER_LOG_BYTES, containerReadFor, pageBytes } from "../../lib/logs/container-lines.ts";
import type { LogEntry } from "../../lib/logs/log-entry.ts";
import type { PageQuery } from "../../lib/logs/log-page.ts";
import type { HostDeps } from "../host-deps.ts";
import { type ContainerLines, type LogTarget, readContainerEntries } from "./log-sources.ts";

/** CLOCK_AHEAD_MS is how far past our now a node's stamps may run (a backward page from now reads to it). */
const CLOCK_AHEAD_MS = 60_000;

/**
 * readContainerPage reads the container lines page `q` needs (logPage then picks the page): one
 * read for a forward page and for a backward page without a cursor; a backward page from a
 * cursor reads back from it (backwardPage). A tail read that filled its bytes has lost its
 * newest lines (the kubelet counts limitBytes from the tail's first line), so it is read again
 * as a backward page from now.
 */
export async function readContainerPage(
  deps: Pick<HostDeps, "kube">,
  t: LogTarget,
  q: PageQuery,
  nowMs: number,
): Promise<LogEntry[]> {
  if (q.direction === "backward" && q.cursor !== undefined) return backwardPage(deps, t, q, q.cursor);
  const read = await readContainerEntries(deps, t, containerReadFor(q));
  if (q.direction === "forward" || !read.truncated) return read.entries;
  return backwardPage(deps, t, q, nowMs + CLOCK_AHEAD_MS);
}

/**
 * backwardPage reads the lines at or before `cursor` (ms) for a backward page: forward reads
 * from a window before the cursor (lib/logs/backward-read.ts), starting at a minute, wider while
 * a window holds no line, narrower while one holds more than the page's bytes, at most one read
 * per window. The first read that fits is the answer. When none fits, the bound cannot hold the
 * lines right before the cursor (more than the page's bytes within 5 s of it, or a quiet window
 * followed by a busy one wider than it): the page is then the last dense read's lines, the
 * oldest of that window, and the ones between it and the cursor are skipped (docs/logs.md).
 */
async function backwardPage(
  deps: Pick<HostDeps, "kube">,
  t: LogTarget,
  q: PageQuery,
  cursor: number,
): Promise<LogEntry[]> {
  const bytes = Math.min(CONTAINER_LOG_BYTES, pageBytes(q));
  const tried = new Set<number>();
  let dense: ContainerLines | undefined;
  for (let at: number | undefined = BACKWARD_FIRST; at !== undefined; ) {
    tried.add(at);
    const since = backwardSince(cursor, at, t.cut.ms);
    const read = await readContainerEntries(deps, t, { from: since, bytes });
    const outcome: BackwardOutcome = backwardOutcome(read.entries, read.truncated, cursor, since, t.cut.ms);
    if (outcome === "fits") return read.entries;
    if (outcome === "dense") dense = read;
    at = nextReach(at, outcome, tried);
  }
  return dense?.entries ?? [];
}
