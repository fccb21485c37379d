import { describe, expect, it } from "vitest";
import type { StepDeps } from "../../functions/deps.ts";
import { tick } from "../../functions/tick.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import type { KubeRequest } from "../../lib/kube/transport.ts";

// The tick's scheduling only (offsets, concurrency, failures). The transport answers the list
// calls it makes (pools, pods, Envs: none here, so no templates or Secrets are listed); what
// reconciling does against Kubernetes is tested in test/integration.

function depsWithPools(n: number): StepDeps {
  const transport = async (req: KubeRequest) => {
    const items =
      req.path === "/apis/agents.navix.sh/v1alpha1/sandboxpools"
        ? Array.from({ length: n }, (_, i) => ({
            metadata: { namespace: "ns", name: `p${i}` },
            spec: { replicas: 0 },
          }))
        : [];
    expect([
      "/apis/agents.navix.sh/v1alpha1/sandboxpools",
      "/api/v1/pods",
      "/apis/agents.navix.sh/v1alpha1/sandboxenvs",
    ]).toContain(req.path);
    return { status: 200, body: JSON.stringify({ items, metadata: { resourceVersion: "1" } }) };
  };
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  return {
    kube: new KubeClient(transport),
    history: {
      put: async () => "inserted",
      get: async () => undefined,
      query: async () => ({ records: [] }),
    },
    now: () => new Date(0),
    log: quiet,
    digests: { resolve: async () => undefined },
    reporter: { controller: "c", instance: "i" },
  };
}

describe("tick", () => {
  it("spreads pool starts over jitter × period and never runs more than `concurrency` at once", async () => {
    const offsets: number[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const ran: string[] = [];
    let r = 0;
    const report = await tick(depsWithPools(50), {
      periodMs: 10_000,
      jitter: 0.2,
      concurrency: 4,
      random: () => (r++ % 10) / 10,
      sleep: async (ms) => {
        offsets.push(ms);
      },
      run: async (ns, name) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((res) => setTimeout(res, 1));
        ran.push(`${ns}/${name}`);
        inFlight--;
        return undefined;
      },
    });
    expect(report.pools).toBe(50);
    expect(new Set(ran).size).toBe(50);
    expect(maxInFlight).toBe(4);
    expect(Math.min(...offsets)).toBe(0);
    expect(Math.max(...offsets)).toBe(1800);
    expect(offsets.every((o) => o >= 0 && o < 2000)).toBe(true);
    // One list each of pools, sandbox pods and Envs, whatever the number of pools (no Envs and no
    // pool waiting for a template copy: no list of templates or Secrets).
    expect(report.requests).toBe(3);
  });

  it("counts failed pools and carries on", async () => {
    const report = await tick(depsWithPools(3), {
      periodMs: 0,
      jitter: 0,
      concurrency: 2,
      run: async (_ns, name) => {
        if (name === "p1") throw new Error("boom");
        return undefined;
      },
    });
    expect(report).toMatchObject({ pools: 3, failed: 1 });
  });
});
