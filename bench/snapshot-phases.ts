// What `npm run bench:pause` (bench/pause.ts) reads of SandboxSnapshots: when a watch first saw
// each snapshot in each phase, on the bench's clock. The objects' own times (pausedAt,
// resumedAt) are RFC 3339 to the second, too coarse to split a pause of a few hundred ms.
import type { KubeConfig } from "@kubernetes/client-node";
import { type SandboxSnapshot, SNAPSHOT_PHASE } from "../lib/crd/sandbox-snapshot.ts";
import { type Following, follow } from "./follow.ts";

/**
 * SnapshotPhases follows one namespace's SandboxSnapshots (one list and watch) and keeps, per
 * snapshot name and phase, the performance.now() of the first event that showed it (a snapshot
 * without a phase counts as Committing, as the design says).
 */
export class SnapshotPhases {
  private readonly seen = new Map<string, number>();
  private following: Following | undefined;

  static async start(kc: KubeConfig, ns: string): Promise<SnapshotPhases> {
    const w = new SnapshotPhases();
    const note = (s: SandboxSnapshot) => {
      const key = `${s.metadata?.name ?? ""}/${s.status?.phase ?? SNAPSHOT_PHASE.COMMITTING}`;
      if (!w.seen.has(key)) w.seen.set(key, performance.now());
    };
    w.following = await follow(
      kc,
      `/apis/agents.navix.sh/v1alpha1/namespaces/${ns}/sandboxsnapshots`,
      undefined,
      (items: SandboxSnapshot[]) => {
        for (const s of items) note(s);
      },
      (type, s: SandboxSnapshot) => {
        if (type !== "DELETED") note(s);
      },
    );
    return w;
  }

  /** at is when the watch first saw the snapshot `name` in `phase` (undefined: never). */
  at(name: string, phase: string): number | undefined {
    return this.seen.get(`${name}/${phase}`);
  }

  stop(): void {
    this.following?.stop();
  }
}
