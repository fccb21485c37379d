// The official `e2b` SDK, unmodified, through the sandbox router (E2B_SANDBOX_URL aims its envd
// calls at the router, which routes them by the E2b-Sandbox-Id/Port headers): what it raises for a
// sandbox the router has no route to. It connects to E2B_TEST_SANDBOX through the control plane,
// runs a command, kills the sandbox and runs again with the same handle; and runs a command in a
// sandbox that never existed. Prints one JSON line for the test to assert.
import { Sandbox } from "e2b";

const out: Record<string, unknown> = {};
const failure = (e: unknown) => `${(e as Error).name}: ${(e as Error).message}`;
const Ctor = Sandbox as unknown as new (opts: Record<string, unknown>) => Sandbox;
try {
  const nobody = new Ctor({ sandboxId: "sbx-nosuchsandbox2345", envdAccessToken: "x", envdVersion: "0.5.7" });
  out.unknownRun = await nobody.commands.run("echo no").then(() => "ran", failure);
  out.unknownRunning = await nobody.isRunning();
  const sbx = await Sandbox.connect(process.env.E2B_TEST_SANDBOX ?? "");
  out.before = (await sbx.commands.run("echo before")).stdout;
  await sbx.kill();
  out.afterKillRun = await sbx.commands.run("echo after").then(() => "ran", failure);
  out.afterKillRead = await sbx.files.read("/home/user/x.txt").then(() => "read", failure);
  out.afterKillRunning = await sbx.isRunning();
} catch (e) {
  out.error = failure(e);
}
console.log(JSON.stringify(out));
