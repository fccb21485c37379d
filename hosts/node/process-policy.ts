import type { Log } from "../../lib/util/log.ts";

/** EXIT_GRACE_MS bounds how long an exiting host waits for its server and thread to close. */
const EXIT_GRACE_MS = 5_000;

/** describe gives a thrown value's message and stack for the log (a non-Error as a string). */
function describe(e: unknown): { message: string; stack?: string } {
  return e instanceof Error
    ? { message: e.message, ...(e.stack ? { stack: e.stack } : {}) }
    : { message: String(e) };
}

/**
 * installProcessPolicy is the host's answer to an error nothing caught (ADR 0019). A promise
 * rejected with no handler is one request's or one run's work failing: the state it worked on is
 * the apiserver's, written by preconditioned writes that converge when the next run comes, so the
 * host logs it as the bug it is and keeps serving everyone else. A synchronous throw out of an
 * event handler is different: it can leave a socket, a stream or a timer half-done in this
 * process, so the host logs it, closes what it can within EXIT_GRACE_MS and exits 1 for its
 * supervisor (the Deployment) to start a clean one.
 */
export function installProcessPolicy(
  proc: Pick<NodeJS.Process, "on" | "exit" | "exitCode">,
  log: Log,
  close: () => Promise<void>,
): void {
  proc.on("unhandledRejection", (reason) => {
    log.error({ err: describe(reason) }, "unhandled rejection (a bug): the host keeps serving");
  });
  let exiting = false;
  proc.on("uncaughtException", (err, origin) => {
    log.error({ err: describe(err), origin }, "uncaught exception: the host exits for a clean restart");
    if (exiting) return;
    exiting = true;
    // Should close() never settle and nothing else hold the loop, the process still ends with 1.
    proc.exitCode = 1;
    const grace = setTimeout(() => proc.exit(1), EXIT_GRACE_MS);
    grace.unref();
    close().then(
      () => proc.exit(1),
      () => proc.exit(1),
    );
  });
}
