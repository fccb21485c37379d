// The official `e2b` SDK, unmodified, on a sandbox of the real node: run as its own process,
// configured as a user configures it (E2B_API_URL, E2B_API_KEY, NODE_EXTRA_CA_CERTS,
// E2B_SANDBOX_URL for envd by header routing). E2B_TEST_SANDBOX names the sandbox, E2B_TEST_DO
// what to do: `burn` starts a busy loop (E2B_TEST_SECONDS long) in the background, `hold`
// allocates E2B_TEST_MIB MiB and keeps them (dd's buffer, blocked writing to a pipe nobody
// reads), `metrics` reads the sandbox's metrics (Sandbox.getMetrics, and the static call with a
// start). It prints one JSON line with what it did or read.
import { Sandbox } from "e2b";

const out: Record<string, unknown> = {};
const id = process.env.E2B_TEST_SANDBOX ?? "";
try {
  const what = process.env.E2B_TEST_DO;
  if (what === "metrics") {
    const sbx = await Sandbox.connect(id);
    const series = await sbx.getMetrics();
    const since = new Date(Date.now() - 3_600_000);
    const statically = await Sandbox.getMetrics(id, { start: since, end: new Date(Date.now() + 60_000) });
    out.metrics = series.map((m) => ({ ...m, timestamp: m.timestamp.toISOString() }));
    out.staticCount = statically.length;
  } else if (what === "burn") {
    const sbx = await Sandbox.connect(id);
    const seconds = Number(process.env.E2B_TEST_SECONDS ?? "30");
    const burn = await sbx.commands.run(`timeout ${seconds} sh -c 'while :; do :; done'`, {
      background: true,
    });
    // The command goes on in the sandbox; this process stops following it.
    await burn.disconnect();
    out.started = burn.pid;
  } else if (what === "hold") {
    const sbx = await Sandbox.connect(id);
    const mib = Number(process.env.E2B_TEST_MIB ?? "64");
    const hold = await sbx.commands.run(`dd if=/dev/zero bs=${mib}M count=1 2>/dev/null | sleep 600`, {
      background: true,
    });
    await hold.disconnect();
    out.started = hold.pid;
  } else out.error = `unknown E2B_TEST_DO ${what}`;
} catch (e) {
  out.error = `${(e as Error).name}: ${(e as Error).message}`;
}
console.log(JSON.stringify(out));
// Nothing it started is followed any more: end now (an open stream would keep the process alive).
process.exit(0);
