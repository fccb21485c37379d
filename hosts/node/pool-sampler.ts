import { type GaugeFamily, type PoolSamples, poolSamplesOf } from "../../lib/console/pool-samples.ts";
import type { Log } from "../../lib/util/log.ts";
import { withTimeout } from "../../lib/util/with-timeout.ts";

/** PoolSamplerSettings: how often to sample, and where the pool gauges are read from. */
export interface PoolSamplerSettings {
  /** intervalSeconds between samplings (AGENTBOX_CONSOLE_SAMPLE_SECONDS, default 30); 0: none. */
  intervalSeconds: number;
  /** gauges reads the pool gauges as the host's threads hold them now (prom-client JSON). */
  gauges: () => Promise<readonly GaugeFamily[]>;
  /** timeoutMs bounds one read (a thread that is restarting or busy skips that sampling). */
  timeoutMs: number;
  log: Log;
  now?: () => Date;
}

/** PoolSampler is the timer that fills the console's samples. */
export interface PoolSampler {
  /** sample takes one sampling now (the timer's; tests call it too). */
  sample(): Promise<void>;
  close(): void;
}

/**
 * startPoolSampler samples the pool gauges the host already keeps for /metrics (set by the
 * reconciler's runs, no apiserver read of its own) every intervalSeconds into `samples`, which
 * the console charts. A sampling that fails or takes too long is skipped (a gap in the chart);
 * one still in flight when the next is due makes that one skip too. The samples live in this
 * process: each replica charts what its own reconciler measured, and a restart starts them over.
 */
export function startPoolSampler(samples: PoolSamples, settings: PoolSamplerSettings): PoolSampler {
  const now = settings.now ?? (() => new Date());
  let busy = false;
  const sample = async () => {
    if (busy) return;
    busy = true;
    try {
      const families = await withTimeout(settings.gauges(), settings.timeoutMs, "the pool gauges");
      samples.record(poolSamplesOf(families), now());
    } catch (e) {
      settings.log.debug({ err: String(e) }, "pool sampling skipped");
    } finally {
      busy = false;
    }
  };
  const timer =
    settings.intervalSeconds > 0
      ? setInterval(() => void sample(), settings.intervalSeconds * 1000)
      : undefined;
  timer?.unref();
  return { sample, close: () => clearInterval(timer) };
}
