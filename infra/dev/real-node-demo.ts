// The `npm start` banner's proof that the real node runs real containers: the official e2b SDK
// creates a sandbox from the busybox-real sample and runs `id; hostname; cat /proc/1/cgroup`
// in it, through the router, as a user would (infra/dev/e2b-journey.ts in a child process).
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import type { KubeClient } from "../../lib/kube/client.ts";

const execFileAsync = promisify(execFile);
const JOURNEY = fileURLToPath(new URL("./e2b-journey.ts", import.meta.url));

/** REAL_NODE_DEMO_COMMAND shows the container's user, its pod's hostname and its kubepods cgroups. */
export const REAL_NODE_DEMO_COMMAND = "id; hostname; cat /proc/1/cgroup";

/**
 * realNodeDemo runs the command in a fresh sandbox of the busybox-real template and returns what
 * the SDK printed; the key it makes is the demo user's (team research, user demo).
 */
export async function realNodeDemo(opts: {
  kube: KubeClient;
  apiKeys: { namespace: string; name: string };
  baseUrl: string;
  routerUrl: string;
  caCert: string;
}): Promise<string> {
  const key = await createApiKey(
    { kube: opts.kube, apiKeys: opts.apiKeys, now: () => new Date() },
    { team: "research", user: "demo" },
  );
  const { stdout } = await execFileAsync(
    process.execPath,
    [JOURNEY, "busybox-real", "--run", REAL_NODE_DEMO_COMMAND],
    {
      timeout: 180_000,
      env: {
        ...process.env,
        E2B_API_URL: `${opts.baseUrl}/e2b`,
        E2B_API_KEY: key,
        E2B_SANDBOX_URL: opts.routerUrl,
        NODE_EXTRA_CA_CERTS: opts.caCert,
      },
    },
  );
  return stdout.trim();
}
