import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { V1Pod } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpActivitySource } from "../../functions/activity-source.ts";
import { claimSandbox } from "../../functions/claim-sandbox.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { reconcilePool } from "../../functions/runs/reconcile-pool.ts";
import { rfc3339 } from "../../lib/util/time.ts";
import { isReady, phaseOf, poolTest, reconcileUntil } from "./support/steps.ts";

// The idle-release step with a pulled activity source: a real HTTP server on loopback plays the
// proxy's stats endpoint, the steps run against the real apiserver with a clock moved past the
// sandboxes' idle timeout. A source that is down must release nothing; one that answers keeps
// the sandboxes it reports alive (and persists their times) and lets the silent ones go.

const t = poolTest("activity");
const { deps, pods } = t;
const TOKEN = `activity-${randomBytes(8).toString("hex")}`;
const suffix = randomBytes(3).toString("hex");
const ACTIVE = `sbx-active-${suffix}`;
const SILENT = `sbx-silent-${suffix}`;

type Mode = { status: number; body: string } | "hang";
let mode: Mode = { status: 200, body: '{"sandboxes":[]}' };
const seenAuth: (string | undefined)[] = [];

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );
}

const source = createServer((req, res) => {
  seenAuth.push(req.headers.authorization);
  if (mode === "hang") return; // never answers; the pull's timeout must end it
  res.writeHead(mode.status, { "content-type": "application/json" });
  res.end(mode.body);
});
let sourceUrl = "";
let refusedUrl = "";

/** withSource runs the steps pulling url, capturing warnings. */
function withSource(url: string): HostDeps & { warnings: string[] } {
  const warnings: string[] = [];
  return {
    ...deps,
    warnings,
    log: { ...deps.log, warn: (obj, msg) => warnings.push(`${msg} ${JSON.stringify(obj)}`) },
    pullActivity: httpActivitySource({ url: `${url}/stats`, token: TOKEN, timeoutMs: 500 }),
  };
}

const podOf = async (id: string) =>
  (await pods("act")).find((p) => p.metadata?.labels?.["agentbox.navix.sh/sandbox-id"] === id);

beforeAll(async () => {
  sourceUrl = await listen(source);
  // A port that refuses connections: listen, note it, close.
  const closed = createServer();
  refusedUrl = await listen(closed);
  await new Promise((r) => closed.close(r));

  await t.createPool("act", 2);
  const idle = await reconcileUntil(deps, t.ns, "act", "2 ready idle pods", async () => {
    const ps = await pods("act");
    return ps.length === 2 && ps.every((p) => phaseOf(p) === "idle" && isReady(p)) ? ps : undefined;
  });
  for (const [i, sandboxId] of [ACTIVE, SILENT].entries()) {
    const claimed = await claimSandbox(deps, idle[i] as V1Pod, {
      sandboxId,
      containerImages: { sandbox: "registry.local/sandbox/agent:1" },
      idleTimeoutSeconds: 30,
    });
    expect(claimed.ok).toBe(true);
  }
  await reconcileUntil(deps, t.ns, "act", "both sandboxes running", async () => {
    const ps = await pods("act");
    return ps.length === 2 && ps.every((p) => phaseOf(p) === "running");
  });
}, 120_000);

afterAll(async () => {
  deps.clock.offsetMs = 0;
  source.closeAllConnections();
  await new Promise((r) => source.close(r));
});

describe("idle-release with a pulled activity source", () => {
  it.each([
    ["refuses connections", "refused" as const, /unreachable: ECONNREFUSED/],
    ["answers 500", { status: 500, body: "overloaded" }, /HTTP 500/],
    [
      "answers an invalid body",
      { status: 200, body: '{"sandboxes":[{"id":"x"}]}' },
      /invalid activity report/,
    ],
    ["does not answer in time", "hang" as const, /did not answer within 500 ms/],
  ])("source %s: nothing is released, however idle", async (_name, how, warning) => {
    if (how !== "refused") mode = how;
    const d = withSource(how === "refused" ? refusedUrl : sourceUrl);
    deps.clock.offsetMs = 120_000; // both sandboxes are 90 s past their 30 s idle timeout
    try {
      const report = await reconcilePool(d, t.ns, "act", "idle-release");
      expect(report).toEqual({ pool: `${t.ns}/act`, found: true, steps: [] });
    } finally {
      deps.clock.offsetMs = 0;
    }
    expect((await pods("act")).map(phaseOf)).toEqual(["running", "running"]);
    expect(d.warnings).toHaveLength(1);
    expect(d.warnings[0]).toMatch(warning);
    expect(d.warnings[0]).not.toContain(TOKEN);
  });

  it("source up: the reported sandbox stays and its last-active is persisted; the silent one is released", async () => {
    const lastActive = new Date(Date.now() + 110_000); // 10 s before the moved clock
    mode = {
      status: 200,
      body: JSON.stringify({ sandboxes: [{ id: ACTIVE, lastActive: lastActive.toISOString() }], proxy: "p" }),
    };
    seenAuth.length = 0;
    const d = withSource(sourceUrl);
    deps.clock.offsetMs = 120_000;
    try {
      await reconcileUntil(d, t.ns, "act", "the silent sandbox released and its pod idle again", async () => {
        const record = await deps.history.get(SILENT);
        const ps = await pods("act");
        return record && ps.filter((p) => phaseOf(p) === "idle").length === 1 ? record : undefined;
      });
    } finally {
      deps.clock.offsetMs = 0;
    }
    expect(await deps.history.get(SILENT)).toMatchObject({
      stopReason: "Released",
      failureReason: "IdleTimeout",
    });
    expect(await deps.history.get(ACTIVE)).toBeUndefined();
    const active = await podOf(ACTIVE);
    expect(active && phaseOf(active)).toBe("running");
    expect(active?.metadata?.annotations?.["agentbox.navix.sh/last-active"]).toBe(rfc3339(lastActive));
    expect(seenAuth.length).toBeGreaterThan(0);
    expect(seenAuth.every((a) => a === `Bearer ${TOKEN}`)).toBe(true);
    // The same report again writes nothing: the annotation already holds it (throttled).
    deps.clock.offsetMs = 120_000;
    try {
      expect((await reconcilePool(d, t.ns, "act", "idle-release")).steps).toEqual([]);
    } finally {
      deps.clock.offsetMs = 0;
    }
  });
});
