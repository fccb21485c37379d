import type { UsageSample } from "./sample.ts";

/** UsageRange selects a sandbox's samples: `at` in [from, to] (RFC 3339), oldest first. */
export interface UsageRange {
  from?: string;
  to?: string;
  /** At most this many samples (the store's own cap when unset). */
  limit?: number;
}

/**
 * UsageStore keeps each sandbox's samples from its claim to its release, bounded per sandbox,
 * in the history's database (so every host of one deployment reads the same series). put is
 * idempotent on (sandboxId, at): several hosts sampling the same moment store it once. A store
 * that cannot reach its database throws HistoryUnavailable, as the history does.
 */
export interface UsageStore {
  put(samples: readonly UsageSample[]): Promise<void>;
  range(sandboxId: string, range: UsageRange): Promise<UsageSample[]>;
  /** forget drops the samples of sandboxes whose last sample is older than `before`; returns how many. */
  forget(before: string): Promise<number>;
}
