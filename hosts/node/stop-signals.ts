import type { Log } from "../../lib/util/log.ts";

/** STOP_SIGNALS end the host: SIGTERM (the kubelet, a supervisor) and SIGINT (a terminal's Ctrl-C). */
const STOP_SIGNALS = { SIGINT: 2, SIGTERM: 15 } as const;

/**
 * installStopSignals makes the first SIGTERM or SIGINT shut the host down gracefully (`shutdown`:
 * the drain of ADR 0029) and exit 0 once it is done (1 if it failed); a second one exits at once,
 * with 128 + the signal's number as a shell reports it (an operator who means it, or a supervisor
 * out of patience).
 */
export function installStopSignals(
  proc: Pick<NodeJS.Process, "on" | "exit">,
  log: Log,
  shutdown: () => Promise<void>,
): void {
  let stopping = false;
  for (const [signal, number] of Object.entries(STOP_SIGNALS)) {
    proc.on(signal, () => {
      if (stopping) {
        log.warn({ signal }, "stopping: a second signal; exiting now");
        proc.exit(128 + number);
        return;
      }
      stopping = true;
      log.info({ signal }, "stopping");
      shutdown().then(
        () => {
          log.info({}, "stopped");
          proc.exit(0);
        },
        (e: unknown) => {
          log.error({ err: String(e) }, "stopping failed");
          proc.exit(1);
        },
      );
    });
  }
}
