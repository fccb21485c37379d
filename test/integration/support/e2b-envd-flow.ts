// The official `e2b` SDK, unmodified, against a sandbox's envd (the stand-in on its pod's IP):
// run as its own process, configured as a user configures it (E2B_API_URL, E2B_API_KEY,
// NODE_EXTRA_CA_CERTS, and E2B_SANDBOX_URL aiming the envd calls at the pod). It connects to the
// sandbox E2B_TEST_SANDBOX through the control plane and prints one JSON line with what each
// data-plane call returned, for the test to assert. E2B_TEST_PROXY, when set, is the SDK's own
// `proxy` option (an HTTP CONNECT proxy for all its calls), instead of E2B_SANDBOX_URL.
import { Sandbox } from "e2b";

const out: Record<string, unknown> = {};
const failure = (e: unknown) => `${(e as Error).name}: ${(e as Error).message}`;
const via = process.env.E2B_TEST_PROXY ? { proxy: process.env.E2B_TEST_PROXY } : {};
try {
  const sbx = await Sandbox.connect(process.env.E2B_TEST_SANDBOX ?? "", via);
  const hi = await sbx.commands.run("echo hi");
  out.echo = { stdout: hi.stdout, stderr: hi.stderr, exitCode: hi.exitCode };
  out.env = (await sbx.commands.run('echo "$GREETING"')).stdout;
  const started = Date.now();
  const chunks: { at: number; data: string }[] = [];
  await sbx.commands.run("for i in 1 2 3 4; do echo tick$i; sleep 0.6; done", {
    onStdout: (data) => {
      chunks.push({ at: Date.now() - started, data });
    },
  });
  out.ticks = chunks;
  out.exit3 = await sbx.commands.run("echo oops >&2; exit 3").then(
    () => "no error",
    (e: unknown) => ({
      name: (e as Error).name,
      exitCode: (e as { exitCode?: number }).exitCode,
      stderr: (e as { stderr?: string }).stderr,
    }),
  );
  await sbx.files.write("/home/user/notes/hello.txt", "hello, file\n");
  out.text = await sbx.files.read("/home/user/notes/hello.txt");
  out.catText = (await sbx.commands.run("cat notes/hello.txt")).stdout;
  const binary = new Uint8Array(1 << 20).map((_, i) => (i * 31 + (i >> 8)) & 255);
  await sbx.files.write("/home/user/blob.bin", binary.buffer);
  const back = await sbx.files.read("/home/user/blob.bin", { format: "bytes" });
  out.binary = { size: back.length, equal: Buffer.compare(Buffer.from(back), Buffer.from(binary)) === 0 };
  out.list = (await sbx.files.list("/home/user")).map((e) => ({ name: e.name, type: e.type, size: e.size }));
  out.missing = await sbx.files.read("/home/user/nope.txt").then(() => "found", failure);
  out.escape = await sbx.files.read("../../../../etc/passwd").then(() => "read", failure);
  const sleeper = await sbx.commands.run("sleep 60", { background: true });
  out.listedSleeper = (await sbx.commands.list()).some((p) => p.pid === sleeper.pid);
  out.killed = await sbx.commands.kill(sleeper.pid);
  out.afterKill = await sleeper.wait().then(() => "exited 0", failure);
  out.killedAgain = await sbx.commands.kill(sleeper.pid);
  // The same SDK with a wrong envd token (the constructor Sandbox.connect uses, token replaced).
  const Ctor = Sandbox as unknown as new (opts: Record<string, unknown>) => Sandbox;
  const forged = new Ctor({
    sandboxId: sbx.sandboxId,
    sandboxDomain: sbx.sandboxDomain,
    envdAccessToken: "wrong-token",
    envdVersion: "0.5.7",
    ...via,
  });
  out.wrongTokenRun = await forged.commands.run("echo no").then(() => "ran", failure);
  out.wrongTokenList = await forged.commands.list().then(() => "listed", failure);
  out.wrongTokenRead = await forged.files.read("/home/user/notes/hello.txt").then(() => "read", failure);
} catch (e) {
  out.error = failure(e);
}
console.log(JSON.stringify(out));
