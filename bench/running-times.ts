import { KubeConfig, type V1Pod } from "@kubernetes/client-node";
import type { ClusterState } from "../infra/cluster/state.ts";
import { SANDBOX_PHASE, SANDBOX_PHASE_LABEL, SANDBOX_POOL_LABEL } from "../lib/api/keys.ts";
import { type Following, follow } from "./follow.ts";
import { waitFor } from "./support.ts";

/**
 * RunningTimes notes, from a watch of one pool's pods (no polling of the apiserver), when each pod
 * was first seen Running: what a burst's users feel is sandboxes Running, not 201s.
 */
export class RunningTimes {
  private readonly at = new Map<string, number>();
  private following: Following | undefined;

  static async follow(state: ClusterState, pool: string, namespace = "bench"): Promise<RunningTimes> {
    const times = new RunningTimes();
    const kc = new KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    const seen = (pod: V1Pod) => {
      const name = pod.metadata?.name ?? "";
      if (pod.metadata?.labels?.[SANDBOX_PHASE_LABEL] === SANDBOX_PHASE.RUNNING && !times.at.has(name))
        times.at.set(name, performance.now());
    };
    times.following = await follow(
      kc,
      `/api/v1/namespaces/${namespace}/pods`,
      `${SANDBOX_POOL_LABEL}=${pool}`,
      (pods: V1Pod[]) => pods.forEach(seen),
      (_type, pod: V1Pod) => seen(pod),
    );
    return times;
  }

  /** allRunning waits until every named pod was seen Running and gives the last such time. */
  async allRunning(names: readonly string[], timeoutMs: number): Promise<number> {
    await waitFor(async () => names.every((n) => this.at.has(n)), timeoutMs);
    return Math.max(...names.map((n) => this.at.get(n) ?? 0));
  }

  stop(): void {
    this.following?.stop();
  }
}
