// The official `e2b` SDK, unmodified, against our E2B API: run as its own process so it is
// configured exactly as a user configures it (E2B_API_URL, E2B_API_KEY, NODE_EXTRA_CA_CERTS for
// the test CA). It prints one JSON line with what each call returned, for the test to assert.
// Two parts, so the test can look at the running sandbox between them: E2B_TEST_PART=create
// (create, getInfo, list, setTimeout, connect) and E2B_TEST_PART=kill (kill E2B_TEST_SANDBOX
// twice, getInfo after it, a create of an unknown template).
import { Sandbox } from "e2b";

const template = process.env.E2B_TEST_TEMPLATE ?? "";
const out: Record<string, unknown> = {};

/** create makes the sandbox and reads it back every way the SDK offers. */
async function create(): Promise<void> {
  const sbx = await Sandbox.create(template, {
    envs: { GREETING: "hello", SECRET_TOKEN: "s3cr3t" },
    metadata: { run: "sdk" },
    timeoutMs: 120_000,
  });
  out.created = {
    sandboxId: sbx.sandboxId,
    envdAccessToken: (sbx as unknown as { envdAccessToken?: string }).envdAccessToken,
  };
  const info = await Sandbox.getInfo(sbx.sandboxId);
  out.info = { ...info, startedAt: info.startedAt.toISOString(), endAt: info.endAt.toISOString() };
  const paginator = Sandbox.list({ query: { metadata: { run: "sdk" } } });
  const listed = await paginator.nextItems();
  out.listed = listed.map((s) => s.sandboxId);
  await Sandbox.setTimeout(sbx.sandboxId, 600_000);
  out.afterTimeout = (await Sandbox.getInfo(sbx.sandboxId)).endAt.toISOString();
  const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 60_000 });
  out.connected = again.sandboxId;
}

/** kill ends the sandbox `id` (twice) and asks for it and for an unknown template after. */
async function kill(id: string): Promise<void> {
  out.killed = await Sandbox.kill(id);
  out.killedAgain = await Sandbox.kill(id);
  try {
    await Sandbox.getInfo(id);
    out.afterKill = "found";
  } catch (e) {
    out.afterKill = (e as Error).name;
  }
  try {
    await Sandbox.create("no-such-template-here");
    out.unknownTemplate = "created";
  } catch (e) {
    out.unknownTemplate = `${(e as Error).name}: ${(e as Error).message}`;
  }
}

try {
  if (process.env.E2B_TEST_PART === "kill") await kill(process.env.E2B_TEST_SANDBOX ?? "");
  else await create();
} catch (e) {
  out.error = `${(e as Error).name}: ${(e as Error).message}`;
}
console.log(JSON.stringify(out));
