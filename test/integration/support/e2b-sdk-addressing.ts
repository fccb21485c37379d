// The official `e2b` SDK, unmodified, asked where it would send a sandbox's traffic: run as its
// own process, configured as a user configures it (E2B_API_URL, E2B_API_KEY, NODE_EXTRA_CA_CERTS).
// It creates a sandbox (left running for the test) and prints one JSON line: the domain and envd
// URL the SDK computed after create, getInfo and connect. No sandbox traffic is sent.
import { Sandbox } from "e2b";

/** envdUrlOf reads the envd URL the SDK computed (a field the SDK keeps to itself). */
const envdUrlOf = (sbx: Sandbox) => (sbx as unknown as { envdApiUrl?: string }).envdApiUrl;

const out: Record<string, unknown> = {};
try {
  const sbx = await Sandbox.create(process.env.E2B_TEST_TEMPLATE ?? "", { timeoutMs: 120_000 });
  out.created = {
    sandboxId: sbx.sandboxId,
    sandboxDomain: sbx.sandboxDomain,
    envdUrl: envdUrlOf(sbx),
    host: sbx.getHost(3000),
    envdAccessToken: (sbx as unknown as { envdAccessToken?: string }).envdAccessToken,
  };
  out.info = { sandboxDomain: (await Sandbox.getInfo(sbx.sandboxId)).sandboxDomain };
  const again = await Sandbox.connect(sbx.sandboxId, { timeoutMs: 120_000 });
  out.connected = { sandboxDomain: again.sandboxDomain, envdUrl: envdUrlOf(again) };
} catch (e) {
  out.error = `${(e as Error).name}: ${(e as Error).message}`;
}
console.log(JSON.stringify(out));
