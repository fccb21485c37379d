// The Node host's periods and bounds: how often it ticks and samples, how long one apiserver
// request may take, how a stopping host drains. One group of settings, read beside config.ts's
// (HOST_ENV spreads TIMING_ENV in) so each variable is still named in the host's errors.
import * as v from "valibot";
import {
  DEFAULT_SNAPSHOT_RETENTION_SECONDS,
  SnapshotRetentionSetting,
} from "../../lib/claims/snapshot-retention.ts";
import { DEFAULT_KUBE_TIMEOUTS, type KubeTimeouts } from "../../lib/kube/transport.ts";
import type { DrainSettings } from "./drain.ts";
import { Seconds } from "./setting-values.ts";

/** TimeoutSeconds is a request bound: more than 0, at most 5 minutes. */
const TimeoutSeconds = v.pipe(
  Seconds,
  v.check((n) => n > 0, "must be more than 0"),
  v.maxValue(300),
);

/**
 * SamplePeriod is a sampling period: whole seconds, 0 (never) or 1 to 3600. Whole, because a
 * sample's `at` is rounded down to the period and keys the samples hosts write alike: a fraction
 * would give keys no other host (or reader) expects.
 */
const SamplePeriod = v.pipe(Seconds, v.integer("must be a whole number of seconds"), v.maxValue(3600));

/** TIMING_ENV lists the timing settings' variables (spread into HOST_ENV). */
export const TIMING_ENV = {
  AGENTBOX_TICK_SECONDS: v.optional(Seconds, "10"),
  AGENTBOX_TICK_CONCURRENCY: v.optional(v.pipe(Seconds, v.integer(), v.minValue(1)), "8"),
  // How often the console's pool charts sample the pool gauges (0: no charts).
  AGENTBOX_CONSOLE_SAMPLE_SECONDS: v.optional(v.pipe(Seconds, v.maxValue(3600)), "30"),
  // How often the sandboxes' resource use is sampled from the kubelets (0: never; the metrics
  // endpoints then show none). 10 by default, as on a developer's machine, whose kubeconfig can
  // read nodes/proxy; the in-cluster install sets 0 unless its sandbox-metrics component grants it.
  AGENTBOX_USAGE_SAMPLE_SECONDS: v.optional(SamplePeriod, "10"),
  // How long a paused sandbox is kept unresumed before it ends with its snapshot (ADR 0045): a week.
  AGENTBOX_SNAPSHOT_RETENTION_SECONDS: v.optional(
    SnapshotRetentionSetting,
    String(DEFAULT_SNAPSHOT_RETENTION_SECONDS),
  ),
  // How long one apiserver request may take (DEFAULT_KUBE_TIMEOUTS): a read, a list, a write.
  AGENTBOX_KUBE_READ_TIMEOUT_SECONDS: v.optional(TimeoutSeconds, String(DEFAULT_KUBE_TIMEOUTS.read / 1000)),
  AGENTBOX_KUBE_LIST_TIMEOUT_SECONDS: v.optional(TimeoutSeconds, String(DEFAULT_KUBE_TIMEOUTS.list / 1000)),
  AGENTBOX_KUBE_WRITE_TIMEOUT_SECONDS: v.optional(TimeoutSeconds, String(DEFAULT_KUBE_TIMEOUTS.write / 1000)),
  // How a stopping host drains (ADR 0029): serve on while endpoints drop it, then let requests end.
  AGENTBOX_SHUTDOWN_SETTLE_SECONDS: v.optional(v.pipe(Seconds, v.maxValue(60)), "5"),
  AGENTBOX_SHUTDOWN_GRACE_SECONDS: v.optional(v.pipe(Seconds, v.maxValue(600)), "25"),
};

/** TimingEnv is TIMING_ENV's variables as valibot gives them back. */
type TimingEnv = v.InferOutput<v.ObjectSchema<typeof TIMING_ENV, undefined>>;

/** TimingSettings are the host's periods and bounds, as HostEnv carries them. */
export interface TimingSettings {
  tickSeconds: number;
  tickConcurrency: number;
  /** consoleSampleSeconds: how often the console's pool charts sample the pool gauges (AGENTBOX_CONSOLE_SAMPLE_SECONDS). */
  consoleSampleSeconds: number;
  /** usageSampleSeconds: how often the sandboxes' resource use is sampled (AGENTBOX_USAGE_SAMPLE_SECONDS). */
  usageSampleSeconds: number;
  /** snapshotRetentionSeconds: how long a paused sandbox is kept (AGENTBOX_SNAPSHOT_RETENTION_SECONDS). */
  snapshotRetentionSeconds: number;
  /** kubeTimeouts bound each apiserver request, in ms (AGENTBOX_KUBE_*_TIMEOUT_SECONDS). */
  kubeTimeouts: KubeTimeouts;
  /** shutdown is how SIGTERM drains the host, in ms (AGENTBOX_SHUTDOWN_SETTLE/GRACE_SECONDS). */
  shutdown: DrainSettings;
}

/** timingSettings turns the validated variables into the host's settings (seconds to ms where it counts in ms). */
export function timingSettings(e: TimingEnv): TimingSettings {
  const ms = (seconds: number) => Math.round(seconds * 1000);
  return {
    tickSeconds: e.AGENTBOX_TICK_SECONDS,
    tickConcurrency: e.AGENTBOX_TICK_CONCURRENCY,
    consoleSampleSeconds: e.AGENTBOX_CONSOLE_SAMPLE_SECONDS,
    usageSampleSeconds: e.AGENTBOX_USAGE_SAMPLE_SECONDS,
    snapshotRetentionSeconds: e.AGENTBOX_SNAPSHOT_RETENTION_SECONDS,
    kubeTimeouts: {
      read: ms(e.AGENTBOX_KUBE_READ_TIMEOUT_SECONDS),
      list: ms(e.AGENTBOX_KUBE_LIST_TIMEOUT_SECONDS),
      write: ms(e.AGENTBOX_KUBE_WRITE_TIMEOUT_SECONDS),
    },
    shutdown: {
      settleMs: ms(e.AGENTBOX_SHUTDOWN_SETTLE_SECONDS),
      graceMs: ms(e.AGENTBOX_SHUTDOWN_GRACE_SECONDS),
    },
  };
}
