import type { LifecycleEvent } from "../../lib/history/lifecycle-event.ts";
import type { SandboxRecord } from "../../lib/history/record.ts";
import type { HistoryQuery } from "../../lib/history/store.ts";

/**
 * record is the i-th test record: pools odd/even, teams a/b, users u0-u3, a minute of the hour
 * per i (so i and i+60 tie on time), a claim time, one image and one metadata entry.
 */
export const record = (i: number, over: Partial<SandboxRecord> = {}): SandboxRecord => ({
  sandboxId: `sbx-${String(i).padStart(3, "0")}`,
  namespace: "ns",
  poolName: i % 2 ? "odd" : "even",
  podName: `pool-${i}`,
  team: i % 3 ? "a" : "b",
  user: `u${i % 4}`,
  claimedAt: "2026-11-21T10:00:00Z",
  terminatedAt: `2026-11-21T10:${String(i % 60).padStart(2, "0")}:00Z`,
  containerImages: { main: `img:${i}` },
  metadata: { run: String(i) },
  cpuMillis: 500,
  memoryBytes: 1024,
  stopReason: "Completed",
  ...over,
});

const RANGE = { from: "2026-11-21T10:00:00Z", to: "2026-11-21T11:00:00Z" };

/** PLANNED_FILTERS are the filters the query-plan tests check each store's indexes serve. */
export const PLANNED_FILTERS: HistoryQuery[] = [
  {},
  RANGE,
  { namespace: "ns" },
  { pool: "odd" },
  { namespace: "ns", pool: "odd" },
  { team: "a" },
  { user: "u1" },
  // A tenant's queries: its team and user always, its other filters on top.
  { team: "a", user: "u1" },
  { team: "a", user: "u1", namespace: "ns", pool: "odd" },
  { team: "a", user: "u1", ...RANGE },
  { namespace: "ns", ...RANGE },
];

/**
 * lifecycle is sandbox `sandboxId`'s n-th pause or resume: pause n at minute 2n-1 past 10:00,
 * resume n at minute 2n, on a pod named for it, with its snapshot image; a pause with its size.
 */
export const lifecycle = (
  sandboxId: string,
  kind: LifecycleEvent["kind"],
  n: number,
  over: Partial<LifecycleEvent> = {},
): LifecycleEvent => ({
  sandboxId,
  kind,
  n,
  at: `2026-11-21T10:${String(2 * n - (kind === "paused" ? 1 : 0)).padStart(2, "0")}:00Z`,
  namespace: "ns",
  poolName: "p",
  podName: `p-${kind}-${n}`,
  team: "a",
  user: "u1",
  images: { main: `registry.local/agentbox-snapshots/ns/${sandboxId}/main:g${n}` },
  ...(kind === "paused" ? { bytes: 1_048_576 * n } : {}),
  ...over,
});
