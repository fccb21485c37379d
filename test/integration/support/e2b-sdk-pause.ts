// The official `e2b` SDK, unmodified, pausing and resuming a sandbox (issue #39), in two steps so
// the test can look at the pool in between. E2B_TEST_DO=pause creates a sandbox from
// E2B_TEST_TEMPLATE, writes files and pauses it; E2B_TEST_DO=resume looks at the paused sandbox
// E2B_TEST_SANDBOX (getInfo, the paused list, a second pause), connects (which resumes it), reads
// the files back, pauses it again and kills it while paused. E2B_SANDBOX_URL aims the envd calls
// at the sandbox router. Prints one JSON line for the test to assert.
import { Sandbox } from "e2b";

const out: Record<string, unknown> = {};
/** at names the step under way, so a failure says which call it was. */
const at = <T>(step: string, call: () => Promise<T>) => {
  out.step = step;
  return call();
};
const failure = (e: unknown) => `${(e as Error).name}: ${(e as Error).message}`;
const TEXT = "written before the pause\n";
const blob = () => new Uint8Array(64 * 1024).map((_, i) => (i * 7 + (i >> 9)) & 255);
try {
  if (process.env.E2B_TEST_DO === "pause") {
    const sbx = await Sandbox.create(process.env.E2B_TEST_TEMPLATE ?? "", {
      timeoutMs: 600_000,
      metadata: { run: "pause" },
    });
    out.sandboxId = sbx.sandboxId;
    await sbx.files.write("/home/user/notes/before.txt", TEXT);
    await sbx.files.write("/home/user/blob.bin", blob().buffer);
    out.paused = await sbx.betaPause();
  } else {
    const id = process.env.E2B_TEST_SANDBOX ?? "";
    const info = await at("getInfo", () => Sandbox.getInfo(id));
    out.info = { state: info.state, metadata: info.metadata, sandboxId: info.sandboxId };
    out.listedPaused = (
      await at("list", () => Sandbox.list({ query: { state: ["paused"] } }).nextItems())
    ).map((s) => ({
      sandboxId: s.sandboxId,
      state: s.state,
    }));
    out.pausedAgain = await at("pause again", () => Sandbox.betaPause(id));
    const sbx = await at("connect", () => Sandbox.connect(id));
    out.connectedId = sbx.sandboxId;
    out.stateAfterConnect = (await at("getInfo after connect", () => Sandbox.getInfo(id))).state;
    out.text = await at("read", () => sbx.files.read("/home/user/notes/before.txt"));
    const back = await at("read blob", () => sbx.files.read("/home/user/blob.bin", { format: "bytes" }));
    out.blobEqual = Buffer.compare(Buffer.from(back), Buffer.from(blob())) === 0;
    out.ran = (await at("run", () => sbx.commands.run("cat notes/before.txt"))).stdout;
    out.repaused = await at("pause the resumed one", () => sbx.betaPause());
    out.stateAfterRepause = (await at("getInfo after the pause", () => Sandbox.getInfo(id))).state;
    out.killed = await at("kill", () => Sandbox.kill(id));
    delete out.step;
    out.afterKill = await Sandbox.getInfo(id).then((i) => i.state, failure);
  }
} catch (e) {
  out.error = failure(e);
}
console.log(JSON.stringify(out));
