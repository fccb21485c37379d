import { expect } from "vitest";
import { httpsRequest } from "./http.ts";
import type { kube } from "./kube.ts";
import type { tenantPool } from "./tenant-pool.ts";

/** CreatedSandbox is an E2B create's answer as the data plane tests use it. */
export interface CreatedSandbox {
  id: string;
  /** token is the envdAccessToken the owner got. */
  token: string;
  /** podIP is where the sandbox runs: the stand-in logs requests by it. */
  podIP: string;
}

/**
 * e2bSandbox creates a sandbox with env vars on `t`'s pool through the E2B API of the test host
 * (so its envd holds its token once answered) and finds its pod's IP.
 */
export async function e2bSandbox(
  cluster: ReturnType<typeof kube>["cluster"],
  t: ReturnType<typeof tenantPool>,
): Promise<CreatedSandbox> {
  const res = await httpsRequest(`https://127.0.0.1:${cluster.hostPort}/e2b/sandboxes`, cluster.caCert, {
    timeoutMs: 60_000,
    method: "POST",
    headers: { "content-type": "application/json", "X-API-KEY": t.key },
    body: JSON.stringify({ templateID: `${t.ns}/p`, envVars: { GREETING: "hi" } }),
  });
  expect(res.status).toBe(201);
  const { sandboxID, envdAccessToken } = JSON.parse(res.body) as {
    sandboxID: string;
    envdAccessToken: string;
  };
  const [pod] = (await t.pods()).filter(
    (p) => p.metadata?.labels?.["agentbox.navix.sh/sandbox-id"] === sandboxID,
  );
  return { id: sandboxID, token: envdAccessToken, podIP: pod?.status?.podIP ?? "" };
}
