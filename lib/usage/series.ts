// One point of a sandbox's series from its pod and its node's figures: only the sandbox's own
// container runs (sandboxFigures), its CPUs and memory from its limits or its node's, CPU use in
// percent of those CPUs, at a time every host sampling that moment agrees on.
import type { V1Pod } from "@kubernetes/client-node";
import { SANDBOX_ID_LABEL } from "../crd/keys.ts";
import { rfc3339 } from "../util/time.ts";
import { type Capacity, sandboxCapacity } from "./capacity.ts";
import type { ContainerUsage, UsageSample } from "./sample.ts";
import { sandboxFigures } from "./sandbox-runs.ts";

/**
 * sampleTime is `now` rounded down to the sample period (RFC 3339, whole seconds): hosts that
 * sample the same moment write the same key (sandbox, at), which the store keeps once.
 */
export function sampleTime(now: Date, periodSeconds: number): string {
  const period = Math.max(1, Math.round(periodSeconds)) * 1000;
  return rfc3339(new Date(Math.floor(now.getTime() / period) * period));
}

/** CpuCounter is one run's cumulative CPU time when it was read, to make a rate of the next read. */
export interface CpuCounter {
  at: string;
  cpuCoreSeconds: number;
}

/** runKey names one run of one container (its pod's uid and its start tell it from the others). */
export const runKey = (f: ContainerUsage) =>
  `${f.namespace}/${f.pod}/${f.podUid ?? ""}/${f.container}/${f.startTime ?? ""}`;

/**
 * cpuCores is one run's CPU use now, in cores: the source's rate when it gives one (the summary
 * API), else the change of its cumulative counter since the previous read of the same run (the
 * resource-metrics text gives only the counter). Undefined: no rate yet (a first read).
 */
export function cpuCores(f: ContainerUsage, previous: CpuCounter | undefined): number | undefined {
  if (f.cpuNanoCores !== undefined) return f.cpuNanoCores / 1e9;
  if (f.cpuCoreSeconds === undefined || !previous) return undefined;
  const seconds = (Date.parse(f.at) - Date.parse(previous.at)) / 1000;
  const used = f.cpuCoreSeconds - previous.cpuCoreSeconds;
  return seconds > 0 && used >= 0 ? used / seconds : undefined;
}

/** SampleInput is what one sandbox's sample is made of. */
export interface SampleInput {
  pod: V1Pod;
  /** node is its node's allocatable resources (the fallback for what the pod does not limit). */
  node: Capacity;
  /** figures are its node's figures (every pod's: sandboxFigures picks the sandbox's). */
  figures: readonly ContainerUsage[];
  /** at is the sample's time (sampleTime). */
  at: string;
  /** previous gives a run's previous counter read (runKey), for sources without a rate. */
  previous?: (key: string) => CpuCounter | undefined;
}

const sum = (xs: readonly (number | undefined)[]) => xs.reduce<number>((a, b) => a + (b ?? 0), 0);

/**
 * sandboxSample is one point of the sandbox's series: CPU count (its CPUs, whole, at least one)
 * and use in percent of that count, memory used (working set), cache and total, disk used (its
 * containers' writable layers) and total (its ephemeral-storage limits, else the filesystem's
 * capacity the kubelet reports, else its node's). Undefined when there is nothing to show: not a
 * sandbox, none of its own runs reported yet (a swap under way), or no CPU rate yet.
 */
export function sandboxSample(input: SampleInput): UsageSample | undefined {
  const sandboxId = input.pod.metadata?.labels?.[SANDBOX_ID_LABEL];
  if (!sandboxId) return undefined;
  const own = sandboxFigures(input.pod, input.figures);
  if (own.length === 0) return undefined;
  const rates = own.map((f) => cpuCores(f, input.previous?.(runKey(f))));
  if (rates.every((r) => r === undefined)) return undefined;
  const capacity = sandboxCapacity(input.pod, input.node);
  const cores = capacity.cpuCores ?? 0;
  const cpuCount = Math.max(1, Math.ceil(cores - 1e-9));
  const memUsed = sum(own.map((f) => f.memoryWorkingSetBytes));
  const diskCapacity = own.find((f) => f.diskCapacityBytes !== undefined)?.diskCapacityBytes;
  return {
    sandboxId,
    at: input.at,
    cpuCount,
    cpuUsedPct: Math.round((sum(rates) / cpuCount) * 100 * 100) / 100,
    memUsed,
    memTotal: Math.max(capacity.memoryBytes ?? 0, memUsed),
    memCache: sum(own.map((f) => f.memoryCacheBytes)),
    diskUsed: sum(own.map((f) => f.diskUsedBytes)),
    diskTotal: capacity.diskBytes ?? diskCapacity ?? input.node.diskBytes ?? 0,
  };
}
