// The official `e2b` SDK, unmodified, setting a sandbox's network: E2B_TEST_DO=rules creates one of
// E2B_TEST_TEMPLATE with allowInternetAccess false and network {allowOut, denyOut}, reads it back
// (getInfo), replaces the rules (updateNetwork, twice: new rules, then none) reading it back each
// time, and leaves the sandbox for the test (E2B_TEST_HOLD=1) or kills it; E2B_TEST_DO=private
// creates one with network {allowPublicTraffic: false}, reports its traffic token and runs a
// command through envd (E2B_SANDBOX_URL), which needs no traffic token. It prints one JSON line.
import { Sandbox } from "e2b";

const template = process.env.E2B_TEST_TEMPLATE ?? "";
const out: Record<string, unknown> = {};
/** info is what getInfo says of the network, as the SDK hands it to its user. */
const info = async (id: string) => {
  const i = await Sandbox.getInfo(id);
  return { allowInternetAccess: i.allowInternetAccess ?? "unset", network: i.network ?? "unset" };
};
try {
  if (process.env.E2B_TEST_DO === "rules") {
    const sbx = await Sandbox.create(template, {
      allowInternetAccess: false,
      network: { allowOut: ["1.1.1.1"], denyOut: ["8.8.8.0/24"] },
      timeoutMs: 120_000,
    });
    out.sandboxId = sbx.sandboxId;
    out.created = await info(sbx.sandboxId);
    await sbx.updateNetwork({ denyOut: ["9.9.9.9"], allowOut: ["1.0.0.1/32"] });
    out.updated = await info(sbx.sandboxId);
    await sbx.updateNetwork({});
    out.cleared = await info(sbx.sandboxId);
    try {
      await sbx.updateNetwork({ allowOut: ["example.com"] });
      out.domain = "accepted";
    } catch (e) {
      out.domain = `${(e as Error).name}: ${(e as Error).message}`;
    }
    if (!process.env.E2B_TEST_HOLD) await sbx.kill();
  } else if (process.env.E2B_TEST_DO === "private") {
    const sbx = await Sandbox.create(template, {
      network: { allowPublicTraffic: false },
      timeoutMs: 120_000,
    });
    out.sandboxId = sbx.sandboxId;
    out.trafficAccessToken = sbx.trafficAccessToken ?? "unset";
    out.network = (await info(sbx.sandboxId)).network;
    out.envd = (await sbx.commands.run("echo envd-ok")).stdout;
  } else out.error = `unknown E2B_TEST_DO ${process.env.E2B_TEST_DO}`;
} catch (e) {
  out.error = `${(e as Error).name}: ${(e as Error).message}`;
}
console.log(JSON.stringify(out));
