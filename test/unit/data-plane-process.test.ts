import { readFileSync } from "node:fs";
import { request } from "node:http";
import { KubeConfig } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { startDataPlaneThread } from "../../hosts/node/data-plane/router-child.ts";
import { alive } from "../../infra/cluster/processes.ts";
import type { Log } from "../../lib/util/log.ts";
import { nowhere, until } from "../integration/support/kube.ts";

const quiet: Log = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const SEALING_KEY = "a-sealing-key-that-must-never-show-0123456789";

/** askRouter sends header-routed GET /health for a sandbox no route knows; status and body. */
function askRouter(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port,
        path: "/health",
        headers: { "e2b-sandbox-id": "nosuchsandbox", "e2b-sandbox-port": "49983" },
        timeout: 10_000,
      },
      (res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("the router did not answer in 10 s")));
    req.on("error", reject);
    req.end();
  });
}

/** routerInProcess starts the router as a process of its own, against an apiserver that is not there. */
function routerInProcess() {
  const kc = new KubeConfig();
  kc.loadFromString(nowhere());
  return startDataPlaneThread(
    kc,
    { config: { envdPort: 49983, sealingKey: SEALING_KEY, plain: { host: "127.0.0.1", port: 0 } } },
    quiet,
    undefined,
    { process: { nodeFlags: ["--no-incremental-marking"] } },
  );
}

// Each test forks a Node process that loads the router's modules: on a loaded machine that alone
// may take longer than vitest's default 5 s, so the tests' own deadlines bound them.
describe("the sandbox router in a process of its own", { timeout: 60_000 }, () => {
  it("runs in a child process with its own V8 flags, its settings never in its environment or arguments", async () => {
    const router = await routerInProcess();
    try {
      const pid = router.pid();
      expect(pid).toBeTypeOf("number");
      expect(pid).not.toBe(process.pid);
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      expect(cmdline).toContain("--no-incremental-marking");
      expect(cmdline.join(" ")).not.toContain(SEALING_KEY);
      expect(readFileSync(`/proc/${pid}/environ`, "utf8")).not.toContain(SEALING_KEY);
      // No apiserver: the router answers that it has not read where sandboxes run (E2B-shaped).
      const answer = await askRouter(router.ports.plain ?? 0);
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body)).toMatchObject({ sandboxId: "nosuchsandbox", code: 503 });
      // The host's calls reach it: activity (none yet) and its metrics.
      expect((await router.activity()).size).toBe(0);
      expect((await router.metrics()).some((m) => m.name === "agentbox_dataplane_requests_total")).toBe(true);
    } finally {
      await router.close();
    }
  });

  it("is started again after it dies, on the same port, and is gone after close", async () => {
    const router = await routerInProcess();
    let second: number | undefined;
    try {
      const first = router.pid() ?? 0;
      const port = router.ports.plain ?? 0;
      expect(await router.kill()).toBe(137);
      expect(alive(first)).toBe(false);
      second = await until("the router started again", 30_000, async () => {
        const pid = router.pid();
        return pid !== undefined && pid !== first ? pid : undefined;
      });
      expect(router.ports.plain).toBe(port);
      expect((await askRouter(port)).status).toBe(503);
    } finally {
      await router.close();
    }
    expect(router.pid()).toBeUndefined();
    expect(alive(second ?? 0)).toBe(false);
  });
});
