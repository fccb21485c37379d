// The whole machine's load, for benchmarks run on a machine others use at the same time: the load
// average and the CPU every process spent, so a run can say how much of the machine was not its own.
import { readFileSync } from "node:fs";

/** loadAverage is /proc/loadavg's 1, 5 and 15 minute figures, as `uptime` prints them. */
export function loadAverage(): string {
  return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(", ");
}

/**
 * machineBusySeconds is the CPU time all processes of the machine have used since boot (user,
 * nice, system, irq, softirq and steal of /proc/stat's first line, in clock ticks of 10 ms). Two
 * readings around a phase, less what the bench's own processes used (cpuSeconds), are what other
 * work on the machine took from it meanwhile.
 */
export function machineBusySeconds(): number {
  const fields = readFileSync("/proc/stat", "utf8").split("\n")[0]?.trim().split(/\s+/).slice(1) ?? [];
  const [user, nice, system, , , irq, softirq, steal] = fields.map(Number);
  return [user, nice, system, irq, softirq, steal].reduce<number>((a, v) => a + (v ?? 0), 0) / 100;
}
