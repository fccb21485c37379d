// The official `e2b` SDK, unmodified, and a sandbox's logs. The SDK has no logs method (2.51.0),
// but it exports its typed API client (`ApiClient`, generated from E2B's OpenAPI document): this
// calls `GET /v2/sandboxes/{sandboxID}/logs` and `GET /sandboxes/{sandboxID}/logs` through it,
// configured as a user configures the SDK (E2B_API_URL, E2B_API_KEY, NODE_EXTRA_CA_CERTS). With
// E2B_TEST_SAY it first runs `echo <text> > /proc/1/fd/1` in the sandbox through envd
// (E2B_SANDBOX_URL): a line the tenant writes into its container's log. It prints one JSON line.
import { ApiClient, ConnectionConfig, Sandbox } from "e2b";

const out: Record<string, unknown> = {};
const id = process.env.E2B_TEST_SANDBOX ?? "";
try {
  const say = process.env.E2B_TEST_SAY;
  if (say) {
    const sbx = await Sandbox.connect(id);
    const run = await sbx.commands.run(`echo '${say}' > /proc/1/fd/1`);
    out.said = run.exitCode;
  }
  const client = new ApiClient(new ConnectionConfig());
  const v2 = await client.api.GET("/v2/sandboxes/{sandboxID}/logs", {
    params: { path: { sandboxID: id }, query: { direction: "forward", level: "warn", limit: 3 } },
  });
  out.v2 = { status: v2.response.status, data: v2.data, error: v2.error };
  const v1 = await client.api.GET("/sandboxes/{sandboxID}/logs", {
    params: { path: { sandboxID: id }, query: { limit: 1000 } },
  });
  out.v1 = { status: v1.response.status, data: v1.data, error: v1.error };
} catch (e) {
  out.error = `${(e as Error).name}: ${(e as Error).message}`;
}
console.log(JSON.stringify(out));
