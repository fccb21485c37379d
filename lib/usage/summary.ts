// The kubelet's summary API (`/stats/summary`, through the apiserver's node proxy) read into each
// container's figures. The answer is the kubelet's (stats/v1alpha1 Summary), so it is read
// defensively: what is malformed is left out, the rest is kept, nothing throws.
import { defined } from "./defined.ts";
import type { ContainerUsage } from "./sample.ts";

type Json = Record<string, unknown>;

const isObject = (x: unknown): x is Json => typeof x === "object" && x !== null && !Array.isArray(x);

/** count is a figure the kubelet gave: a finite number, 0 or more; anything else is no figure. */
const count = (x: unknown): number | undefined =>
  typeof x === "number" && Number.isFinite(x) && x >= 0 ? x : undefined;

const text = (x: unknown): string | undefined => (typeof x === "string" && x !== "" ? x : undefined);

/** containerUsage reads one container of one pod; undefined when it has no name. */
function containerUsage(
  pod: { namespace: string; pod: string; podUid?: string },
  c: Json,
  at: string,
): ContainerUsage | undefined {
  const name = text(c.name);
  if (!name) return undefined;
  const cpu = isObject(c.cpu) ? c.cpu : {};
  const memory = isObject(c.memory) ? c.memory : {};
  const rootfs = isObject(c.rootfs) ? c.rootfs : {};
  const nanoSeconds = count(cpu.usageCoreNanoSeconds);
  const workingSet = count(memory.workingSetBytes);
  const usage = count(memory.usageBytes);
  return defined<ContainerUsage>({
    ...pod,
    container: name,
    startTime: text(c.startTime),
    // When the kubelet took the figures, else when we asked.
    at: text(cpu.time) ?? text(memory.time) ?? at,
    cpuNanoCores: count(cpu.usageNanoCores),
    cpuCoreSeconds: nanoSeconds === undefined ? undefined : nanoSeconds / 1e9,
    memoryWorkingSetBytes: workingSet,
    // The page cache the usage counts and the working set does not (the kubelet's own split).
    memoryCacheBytes:
      usage !== undefined && workingSet !== undefined ? Math.max(0, usage - workingSet) : undefined,
    diskUsedBytes: count(rootfs.usedBytes),
    diskCapacityBytes: count(rootfs.capacityBytes),
  });
}

/**
 * parseSummary reads the kubelet's summary (pods[].podRef{name,namespace,uid},
 * pods[].containers[]{name, startTime, cpu, memory, rootfs}) into one ContainerUsage per
 * container, taken at the figures' own time (`at` when they carry none). A pod or container that
 * is malformed is left out; an answer that is not a summary at all gives none.
 */
export function parseSummary(summary: unknown, at: string): ContainerUsage[] {
  if (!isObject(summary) || !Array.isArray(summary.pods)) return [];
  const out: ContainerUsage[] = [];
  for (const p of summary.pods) {
    if (!isObject(p) || !isObject(p.podRef) || !Array.isArray(p.containers)) continue;
    const namespace = text(p.podRef.namespace);
    const name = text(p.podRef.name);
    if (!namespace || !name) continue;
    const pod = defined({ namespace, pod: name, podUid: text(p.podRef.uid) });
    for (const c of p.containers) {
      const usage = isObject(c) ? containerUsage(pod, c, at) : undefined;
      if (usage) out.push(usage);
    }
  }
  return out;
}

/**
 * parseSummaryText is parseSummary of the node proxy's answer as text, parsed once; undefined
 * when the answer is not JSON at all (a proxy's error page), which the caller reports as such
 * rather than as a node with no containers.
 */
export function parseSummaryText(body: string, at: string): ContainerUsage[] | undefined {
  let summary: unknown;
  try {
    summary = JSON.parse(body);
  } catch {
    return undefined;
  }
  return parseSummary(summary, at);
}
