import { type KubeConfig, type V1Pod, Watch } from "@kubernetes/client-node";
import { SANDBOX_ID_LABEL } from "../../../lib/crd/keys.ts";

/**
 * ClaimsSeen watches a namespace's pods and keeps, per pod, every sandbox id its sandbox-id label
 * carried (a claim writes it, the reset to idle removes it), and the label's changes in order: a
 * pod claimed over a claim goes from one id straight to another. It watches from a resourceVersion,
 * so it sees every version the apiserver keeps after it; a watch the apiserver ends (its timeout,
 * a slow reader) is resumed from the last version seen, and one that cannot be (an error event,
 * such as 410 Gone: versions lost) is kept in `broken`, and the test must fail on it.
 */
export class ClaimsSeen {
  readonly ids = new Map<string, Set<string>>();
  /** labels are each pod's sandbox-id label over time, a change per entry ("" for none). */
  readonly labels = new Map<string, string[]>();
  broken: string | undefined;
  /** resumed counts the watches resumed after the apiserver ended one. */
  resumed = 0;
  private request: { abort: () => void } | undefined;
  private closing = false;
  private version = "";

  private readonly kc: KubeConfig;
  private readonly namespace: string;

  private constructor(kc: KubeConfig, namespace: string) {
    this.kc = kc;
    this.namespace = namespace;
  }

  /** start watches `namespace`'s pods from `resourceVersion` (a list's: nothing before it is missed). */
  static async start(kc: KubeConfig, namespace: string, resourceVersion: string): Promise<ClaimsSeen> {
    const seen = new ClaimsSeen(kc, namespace);
    seen.version = resourceVersion;
    await seen.watch();
    return seen;
  }

  private async watch(): Promise<void> {
    this.request = await new Watch(this.kc).watch(
      `/api/v1/namespaces/${this.namespace}/pods`,
      { resourceVersion: this.version, allowWatchBookmarks: true },
      (type: string, pod: V1Pod) => {
        if (type === "ERROR") {
          this.broken ??= `watch error: ${JSON.stringify(pod)}`;
          return;
        }
        this.version = pod.metadata?.resourceVersion ?? this.version;
        const id = pod.metadata?.labels?.[SANDBOX_ID_LABEL];
        const name = pod.metadata?.name;
        if (!name) return;
        const labels = this.labels.get(name) ?? [];
        if (labels.at(-1) !== (id ?? "")) labels.push(id ?? "");
        this.labels.set(name, labels);
        if (!id) return;
        const ids = this.ids.get(name) ?? new Set<string>();
        ids.add(id);
        this.ids.set(name, ids);
      },
      (err: unknown) => {
        if (this.closing || this.broken) return;
        if (err) {
          this.broken = `watch failed: ${String(err)}`;
          return;
        }
        this.resumed++;
        this.watch().catch((e: unknown) => {
          this.broken ??= `watch not resumed: ${String(e)}`;
        });
      },
    );
  }

  /** twice lists the pods that carried more than one sandbox id, ever, with the ids. */
  twice(): [string, string[]][] {
    return [...this.ids].filter(([, ids]) => ids.size > 1).map(([pod, ids]) => [pod, [...ids]]);
  }

  /**
   * overClaimed lists the pods claimed while they held a sandbox (the label went from one id
   * straight to another), or whose sandbox came back after it left, with the label's changes.
   */
  overClaimed(): [string, string[]][] {
    return [...this.labels].filter(([, labels]) => {
      const ids = labels.filter(Boolean);
      return new Set(ids).size < ids.length || labels.some((l, i) => i > 0 && l && labels[i - 1]);
    });
  }

  close(): void {
    this.closing = true;
    this.request?.abort();
  }
}
