import type { V1Pod } from "@kubernetes/client-node";
import pLimit from "p-limit";
import { SANDBOX_ID_LABEL, SANDBOX_PHASE, SANDBOX_PHASE_LABEL } from "../../lib/crd/keys.ts";
import { HistoryUnavailable } from "../../lib/history/store.ts";
import { nodeCapacity } from "../../lib/usage/capacity.ts";
import { isResting, type NodeRest, nextRest } from "../../lib/usage/node-rest.ts";
import { forgetDue, usageForgetBefore } from "../../lib/usage/retention.ts";
import type { UsageSample } from "../../lib/usage/sample.ts";
import { type CpuCounter, runKey, sampleTime, sandboxSample } from "../../lib/usage/series.ts";
import type { HostDeps } from "../host-deps.ts";
import { NodeFiguresFailure, readNodeFigures } from "./node-figures.ts";

/** CLAIMED is the label selector of the pods that hold a sandbox now (starting or running). */
export const CLAIMED = `${SANDBOX_PHASE_LABEL} in (${SANDBOX_PHASE.STARTING},${SANDBOX_PHASE.RUNNING}),${SANDBOX_ID_LABEL}`;

/** UsageSamplerDeps: the client, the clock, a log, and the store the samples go to (none: no sampling). */
export type UsageSamplerDeps = Pick<HostDeps, "kube" | "log" | "now" | "usage">;

/** UsageSamplerOptions: the period, and where the claimed pods come from. */
export interface UsageSamplerOptions {
  /** periodSeconds between samples (AGENTBOX_USAGE_SAMPLE_SECONDS): each sample's `at` is rounded down to it. */
  periodSeconds: number;
  /** pods, when given, are the pool pods of a watch-fed view (undefined while it is out of step: then listed). */
  pods?: () => readonly V1Pod[] | undefined;
  /** namespace limits the sampling to one namespace's sandboxes (a namespace-scoped deployment). */
  namespace?: string;
  /** timeoutMs bounds each node's reads (default: the period, at most 5 s). */
  timeoutMs?: number;
  /** concurrency: at most this many nodes are read at once (default 4). */
  concurrency?: number;
}

/** UsageSampleReport says what one sample did. */
export interface UsageSampleReport {
  nodes: number;
  pods: number;
  samples: number;
  /** failed names the nodes whose figures could not be read this time. */
  failed: string[];
  /** skipped names the nodes left out this time: they failed lately (UsageSampler's backoff). */
  skipped: string[];
}

/** FORBIDDEN is the failure key of a 403 on a node's reads: the host's role, logged once for all nodes. */
const FORBIDDEN = "forbidden";

/** FAILURE_MESSAGES are the warnings of the host-wide failures (the others: a node's). */
const FAILURE_MESSAGES: Record<string, string> = {
  store: "usage: the usage store cannot take samples",
  [FORBIDDEN]:
    "usage: this host's role may not read nodes or nodes/proxy (403): apply the kustomize component " +
    "infra/deploy/components/sandbox-metrics, or set AGENTBOX_USAGE_SAMPLE_SECONDS=0 to stop sampling",
};

const isClaimed = (pod: V1Pod) => {
  const labels = pod.metadata?.labels ?? {};
  const phase = labels[SANDBOX_PHASE_LABEL];
  return !!labels[SANDBOX_ID_LABEL] && (phase === SANDBOX_PHASE.STARTING || phase === SANDBOX_PHASE.RUNNING);
};

/**
 * UsageSampler takes the samples of every claimed sandbox: one step finds the nodes that host
 * claimed pods, reads each node's figures through the apiserver's node proxy (readNodeFigures:
 * one node failing or slow never holds up the others, and each node's failure is logged once per
 * kind, again only after it recovered; one that keeps failing is read less often, see nextRest;
 * a 403 is logged once for the host, naming the component that grants the reads), makes each
 * sandbox's sample from its own container runs (sandboxSample) and puts them in the usage store.
 *
 * Every host samples, and that is on purpose: the samples' key is (sandbox, `at` rounded down to
 * the period), so hosts sampling the same moment write one row, and a series has no gap while at
 * least one host runs, with no leader to elect or lose. The cost is one read per node per host
 * per period; sharding the nodes among the hosts (by a hash of the node's name over the hosts
 * listed in a Lease or the endpoints) is the follow-up once fleets are big enough for it to count.
 *
 * It keeps, per container run, the last cumulative CPU counter it read, for sources that give no
 * rate (resource-metrics text): a rate needs two reads, so such a sandbox's first sample comes
 * one period after its run was first seen.
 */
export class UsageSampler {
  private readonly counters = new Map<string, CpuCounter>();
  /** failing holds each failing node's failure kind (and "store" for the store), logged once. */
  private readonly failing = new Map<string, string>();
  /** resting holds each failing node's failures in a row and when it is read again (nextRest). */
  private readonly resting = new Map<string, NodeRest>();

  private readonly deps: UsageSamplerDeps;
  private readonly options: UsageSamplerOptions;

  constructor(deps: UsageSamplerDeps, options: UsageSamplerOptions) {
    this.deps = deps;
    this.options = options;
  }

  /** claimedPods are the pods holding a sandbox: from the view when in step, else one cached list. */
  private async claimedPods(): Promise<V1Pod[]> {
    const viewed = this.options.pods?.();
    if (viewed)
      return viewed.filter(
        (p) =>
          isClaimed(p) &&
          (this.options.namespace === undefined || p.metadata?.namespace === this.options.namespace),
      );
    return (await this.deps.kube.listPods(this.options.namespace, CLAIMED, { cached: true })).items;
  }

  /** sample takes one sample of every claimed sandbox now and stores them. */
  async sample(): Promise<UsageSampleReport> {
    const { deps, options } = this;
    const store = deps.usage;
    if (!store) return { nodes: 0, pods: 0, samples: 0, failed: [], skipped: [] };
    const now = deps.now();
    const at = sampleTime(now, options.periodSeconds);
    const pods = (await this.claimedPods()).filter((p) => p.spec?.nodeName);
    const byNode = new Map<string, V1Pod[]>();
    for (const pod of pods) {
      const node = pod.spec?.nodeName ?? "";
      const onNode = byNode.get(node);
      if (onNode) onNode.push(pod);
      else byNode.set(node, [pod]);
    }
    const timeoutMs = options.timeoutMs ?? Math.min(5000, Math.max(1000, options.periodSeconds * 1000));
    const limit = pLimit(Math.max(1, options.concurrency ?? 4));
    const samples: UsageSample[] = [];
    const failed: string[] = [];
    const seen = new Map<string, CpuCounter>();
    const skipped: string[] = [];
    await Promise.all(
      [...byNode].map(([name, onNode]) =>
        limit(async () => {
          if (isResting(this.resting.get(name), now.getTime())) {
            skipped.push(name);
            return;
          }
          try {
            const { node, figures } = await readNodeFigures(deps.kube, name, now.toISOString(), timeoutMs);
            this.resting.delete(name);
            this.recovered(name);
            this.recovered(FORBIDDEN);
            const capacity = nodeCapacity(node);
            for (const pod of onNode) {
              const sample = sandboxSample({
                pod,
                node: capacity,
                figures,
                at,
                previous: (key) => this.counters.get(key),
              });
              if (sample) samples.push(sample);
            }
            for (const f of figures)
              if (f.cpuNanoCores === undefined && f.cpuCoreSeconds !== undefined)
                seen.set(runKey(f), { at: f.at, cpuCoreSeconds: f.cpuCoreSeconds });
          } catch (e) {
            failed.push(name);
            this.resting.set(
              name,
              nextRest(this.resting.get(name), now.getTime(), options.periodSeconds * 1000),
            );
            // A 403 is this host's role, not the node: said once for the host, naming the fix.
            if (e instanceof NodeFiguresFailure && e.status === 403)
              this.failed(FORBIDDEN, "forbidden", String(e));
            else this.failed(name, e instanceof NodeFiguresFailure ? e.kind : "figures", String(e));
          }
        }),
      ),
    );
    // Only the runs read this time are kept: a run that ended takes its counter with it.
    this.counters.clear();
    for (const [key, counter] of seen) this.counters.set(key, counter);
    await this.put(samples);
    if (forgetDue(now, options.periodSeconds * 1000)) await this.forget(now);
    for (const name of this.resting.keys()) if (!byNode.has(name)) this.resting.delete(name);
    return { nodes: byNode.size, pods: pods.length, samples: samples.length, failed, skipped };
  }

  /** put stores the samples; a store that cannot answer now loses this sample (logged once). */
  private async put(samples: UsageSample[]): Promise<void> {
    try {
      await this.deps.usage?.put(samples);
      this.recovered("store");
    } catch (e) {
      if (!(e instanceof HistoryUnavailable)) throw e;
      this.failed("store", "unavailable", String(e));
    }
  }

  /** forget drops the series kept past their retention (usageForgetBefore); a store down skips it once. */
  private async forget(now: Date): Promise<void> {
    try {
      const forgotten = await this.deps.usage?.forget(usageForgetBefore(now));
      if (forgotten) this.deps.log.info({ forgotten }, "usage: forgot series past their retention");
    } catch (e) {
      if (!(e instanceof HistoryUnavailable)) throw e;
      this.failed("store", "unavailable", String(e));
    }
  }

  private failed(key: string, kind: string, err: string): void {
    if (this.failing.get(key) === kind) return;
    this.failing.set(key, kind);
    const node = key === "store" || key === FORBIDDEN ? undefined : key;
    this.deps.log.warn({ node, kind, err }, FAILURE_MESSAGES[key] ?? "usage: cannot read a node's figures");
  }

  private recovered(key: string): void {
    if (!this.failing.delete(key)) return;
    this.deps.log.info({ what: key }, "usage: sampling works again");
  }
}
