// How long a sandbox's resource-use series is kept after its last sample.

/**
 * USAGE_RETENTION_MS: a series is kept this long after its newest sample (a sandbox released or
 * no longer sampled), long enough to look at a finished sandbox's use the next day; a running
 * sandbox's series is never forgotten, whatever its age, since it keeps getting samples.
 */
export const USAGE_RETENTION_MS = 24 * 60 * 60 * 1000;

/** USAGE_FORGET_EVERY_MS: how often a host asks its usage store to forget old series. */
export const USAGE_FORGET_EVERY_MS = 60 * 60 * 1000;

/** usageForgetBefore is the bound to pass UsageStore.forget at `now`: whole seconds, RFC 3339, as samples' times are. */
export function usageForgetBefore(now: Date, retentionMs = USAGE_RETENTION_MS): string {
  return new Date(Math.floor((now.getTime() - retentionMs) / 1000) * 1000)
    .toISOString()
    .replace(".000Z", "Z");
}

/**
 * forgetDue says whether the sample taken at `now` is the one that should also forget old series:
 * the one whose period contains a whole multiple of `everyMs`. It keeps no state, so a Worker's
 * sampler made afresh each invocation forgets once an hour as a Node host's long-lived one does;
 * several hosts forgetting in the same hour is harmless (forget is idempotent).
 */
export function forgetDue(now: Date, periodMs: number, everyMs = USAGE_FORGET_EVERY_MS): boolean {
  const t = now.getTime();
  return Math.floor(t / everyMs) !== Math.floor((t - Math.max(1, periodMs)) / everyMs);
}
