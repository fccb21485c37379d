import type { UsageSample } from "./sample.ts";

/**
 * UsageRange selects a sandbox's samples: `at` in [from, to] (RFC 3339, any offset or precision:
 * the store compares whole seconds in UTC), oldest first.
 */
export interface UsageRange {
  from?: string;
  to?: string;
  /** At most this many samples, the oldest of the range (at most, and by default, the store's cap). */
  limit?: number;
  /**
   * newest takes the newest `limit` samples of the range instead of the oldest (still answered
   * oldest first): the latest sample of a sandbox is one keyed row read backwards, not every
   * sample of a window read to keep the last.
   */
  newest?: boolean;
}

/**
 * UsageStore keeps each sandbox's samples from its claim to its release, bounded per sandbox,
 * in the history's database (so every host of one deployment reads the same series). put is
 * idempotent on (sandboxId, at): several hosts sampling the same moment store it once. A store
 * that cannot reach its database throws HistoryUnavailable, as the history does; a time that
 * does not parse is a RangeError naming it. Samples' times are kept in whole seconds (UTC, "Z").
 */
export interface UsageStore {
  put(samples: readonly UsageSample[]): Promise<void>;
  range(sandboxId: string, range: UsageRange): Promise<UsageSample[]>;
  /** forget drops the samples of sandboxes whose last sample is older than `before`; returns how many sandboxes. */
  forget(before: string): Promise<number>;
}
