// What a sandbox's resource use is, as the kubelet reports it and as E2B's metrics answer it.

/**
 * ContainerUsage is one container's figures at one moment, as a kubelet source reports them
 * (the summary API's JSON or the resource-metrics text kwok and the kubelet serve). A figure the
 * source does not give is undefined, never a made-up zero.
 */
export interface ContainerUsage {
  namespace: string;
  pod: string;
  /** podUid tells a pod from a later one of the same name, when the source says it. */
  podUid?: string;
  container: string;
  /** startTime is when this container (this run of it) started, RFC 3339. */
  startTime?: string;
  /** at is when the figures were taken, RFC 3339. */
  at: string;
  /** cpuNanoCores is the CPU use rate now; cpuCoreSeconds the cumulative use (a counter). */
  cpuNanoCores?: number;
  cpuCoreSeconds?: number;
  memoryWorkingSetBytes?: number;
  /** memoryCacheBytes: page cache the container's memory use includes (usage − working set). */
  memoryCacheBytes?: number;
  /** rootfs: the container's writable layer, used and the filesystem's capacity. */
  diskUsedBytes?: number;
  diskCapacityBytes?: number;
}

/**
 * UsageSample is one point of a sandbox's series, in E2B's metric shape (SandboxMetric): taken at
 * `at` (RFC 3339, whole seconds), CPU count and use in percent of those CPUs, memory and disk
 * used and total in bytes.
 */
export interface UsageSample {
  sandboxId: string;
  at: string;
  cpuCount: number;
  cpuUsedPct: number;
  memUsed: number;
  memTotal: number;
  memCache: number;
  diskUsed: number;
  diskTotal: number;
}
