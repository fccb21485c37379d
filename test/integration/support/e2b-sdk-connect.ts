// The official `e2b` SDK, unmodified, connecting to a sandbox (E2B_TEST_SANDBOX) as the tenant
// of E2B_API_KEY through the control plane at E2B_API_URL. It prints one JSON line: the domain
// and envd URL the SDK computed, whether it holds a token, and what running a command did: its
// error, the connections that failed (undici's diagnostics channels: host and code) and the
// origins any request headers were sent to. The command is only tried when the envd URL cannot
// leave the machine (a reserved name, RFC 6761): this script never sends a token anywhere else.
import { subscribe } from "node:diagnostics_channel";
import { Sandbox } from "e2b";

const LOCAL_ONLY = /\.(invalid|test|localhost)$/;

const out: Record<string, unknown> = {};
try {
  const sbx = await Sandbox.connect(process.env.E2B_TEST_SANDBOX ?? "", { timeoutMs: 120_000 });
  const envdUrl = (sbx as unknown as { envdApiUrl?: string }).envdApiUrl ?? "";
  out.connected = {
    sandboxDomain: sbx.sandboxDomain,
    envdUrl,
    hasToken: Boolean((sbx as unknown as { envdAccessToken?: string }).envdAccessToken),
  };
  if (!LOCAL_ONLY.test(new URL(envdUrl).hostname)) out.ran = `not tried: ${envdUrl} may leave the machine`;
  else {
    const failed: string[] = [];
    const sent: string[] = [];
    subscribe("undici:client:connectError", (m) => {
      const { connectParams, error } = m as { connectParams: { hostname: string }; error: { code?: string } };
      failed.push(`${connectParams.hostname} ${error.code}`);
    });
    subscribe("undici:client:sendHeaders", (m) => {
      sent.push((m as { request: { origin: string } }).request.origin);
    });
    try {
      await sbx.commands.run("true", { requestTimeoutMs: 10_000 });
      out.ran = "ok";
    } catch (e) {
      out.ran = (e as Error).message;
    }
    Object.assign(out, { failed: [...new Set(failed)], sent });
  }
} catch (e) {
  out.error = `${(e as Error).name}: ${(e as Error).message}`;
}
console.log(JSON.stringify(out));
