import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { kube } from "./kube.ts";

/**
 * runSdkScript runs one of the support scripts that drive the official e2b SDK, unmodified, in a
 * process of its own (the SDK reads its settings from the environment), against the test host:
 * `E2B_API_URL` is the host's `/e2b`, the test CA is trusted, and `env` adds the rest (the key,
 * the template or sandbox, E2B_SANDBOX_URL). It resolves with what the script printed.
 */
export async function runSdkScript(
  script: string,
  env: Record<string, string>,
  timeoutMs = 120_000,
): Promise<string> {
  const { cluster } = kube();
  const { stdout } = await promisify(execFile)(
    "node_modules/.bin/node",
    [`test/integration/support/${script}`],
    {
      env: {
        ...process.env,
        E2B_API_URL: `https://127.0.0.1:${cluster.hostPort}/e2b`,
        NODE_EXTRA_CA_CERTS: cluster.caCert,
        ...env,
      },
      timeout: timeoutMs,
    },
  );
  return stdout;
}
