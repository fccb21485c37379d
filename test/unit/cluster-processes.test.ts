import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startDetached, waitWhileRunning } from "../../infra/cluster/processes.ts";

// How `cluster up` tells a component that died from one that is slow: real child processes (sh
// and sleep), nothing of a cluster.
describe("waitWhileRunning", () => {
  const dir = mkdtempSync(join(tmpdir(), "agentbox-processes-"));

  it("reports a component that exits with its exit code and the tail of its log", async () => {
    const log = join(dir, "dies.log");
    const started = startDetached("/bin/sh", ["-c", "echo listening failed: address in use; exit 3"], log);
    const error = await waitWhileRunning(
      "the component",
      [{ name: "dies", log, started }],
      async () => false,
    ).catch((e: unknown) => String(e));
    expect(error).toContain("dies exited (code 3) while waiting for the component; last log lines:");
    expect(error).toContain("listening failed: address in use");
  });

  it("reports a component killed by a signal, and says when its log is empty", async () => {
    const log = join(dir, "killed.log");
    writeFileSync(log, "");
    const started = startDetached("/bin/sleep", ["30"], log);
    process.kill(started.pid, "SIGKILL");
    const error = await waitWhileRunning(
      "the component",
      [{ name: "killed", log, started }],
      async () => false,
    ).catch((e: unknown) => String(e));
    expect(error).toContain("killed exited (signal SIGKILL) while waiting for the component");
    expect(error).toContain("(the log is empty)");
  });

  it("waits for a running component however its command line reads, until the check holds", async () => {
    // The old liveness check (the state directory in the process's /proc command line) took a
    // running child whose command line does not name it, as this one's does not, for dead.
    const log = join(dir, "slow.log");
    const started = startDetached("/bin/sleep", ["30"], log);
    const readyAt = Date.now() + 600;
    await waitWhileRunning(
      "the slow component",
      [{ name: "slow", log, started }],
      async () => Date.now() >= readyAt,
    );
    expect(started.ended()).toBeUndefined();
    process.kill(started.pid, "SIGKILL");
  });
});
