import { describe, expect, it } from "vitest";
import { type HostDeps, hostDeps } from "../../functions/host-deps.ts";
import { tick } from "../../functions/runs/tick.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import type { KubeRequest } from "../../lib/kube/transport.ts";

// The tick's scheduling only (offsets, concurrency, failures). The transport answers the list
// calls it makes (pools, pods, Envs, egress policies, snapshots: no Envs here, so no templates or
// Secrets are listed); what
// reconciling does against Kubernetes is tested in test/integration.

function depsWithPools(n: number): HostDeps {
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
      "/apis/networking.k8s.io/v1/networkpolicies",
      "/apis/agents.navix.sh/v1alpha1/sandboxsnapshots",
    ]).toContain(req.path);
    return { status: 200, body: JSON.stringify({ items, metadata: { resourceVersion: "1" } }) };
  };
  return depsOver(transport);
}

/** depsOver are step deps whose apiserver is `transport`, with a quiet log and a fixed clock. */
function depsOver(transport: (req: KubeRequest) => Promise<{ status: number; body: string }>): HostDeps {
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  return hostDeps({
    kube: new KubeClient(transport),
    watch: async () => {
      throw new Error("a tick does not watch");
    },
    history: {
      put: async () => "inserted",
      get: async () => undefined,
      query: async () => ({ records: [] }),
      putEvent: async () => "inserted",
      events: async () => [],
    },
    now: () => new Date(0),
    log: quiet,
    digests: { resolve: async () => undefined },
    reporter: { controller: "c", instance: "i" },
  });
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
    // One list each of pools, sandbox pods, Envs, sandbox egress policies and SandboxSnapshots (the
    // sweeps), whatever the number of pools (no Envs and no pool waiting for a template copy: no
    // list of templates or Secrets).
    expect(report.requests).toBe(5);
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

// The tick writes the status of the templates it listed (issue #26), from the pools it read; a tick
// over one namespace sees only that namespace's pools, so it leaves templates (cluster-scoped)
// alone. The pool runs are replaced: what they do is tested elsewhere.

const BASE = "/apis/agents.navix.sh/v1alpha1";

/** depsWithTemplate lists one pool naming template "python", and that template; `sent` records the requests. */
function depsWithTemplate(sent: KubeRequest[]): HostDeps {
  const transport = async (req: KubeRequest) => {
    sent.push(req);
    const items = req.path.endsWith("/sandboxpools")
      ? [{ metadata: { namespace: "ns", name: "web" }, spec: { replicas: 0, templateName: "python" } }]
      : req.path === `${BASE}/sandboxtemplates`
        ? [
            {
              metadata: { name: "python", resourceVersion: "5", generation: 1 },
              spec: { template: { spec: { containers: [{ name: "main", image: "py:1" }] } } },
            },
          ]
        : [];
    return {
      status: 200,
      body: JSON.stringify(req.method === "PATCH" ? {} : { items, metadata: { resourceVersion: "9" } }),
    };
  };
  return depsOver(transport);
}

const options = { periodMs: 0, jitter: 0, concurrency: 2, run: async () => undefined };

describe("tick: template status", () => {
  it("writes the status of each template it listed, tested against the listed version", async () => {
    const sent: KubeRequest[] = [];
    const report = await tick(depsWithTemplate(sent), options);
    expect(report).toMatchObject({ templates: 1, writes: 1, failed: 0 });
    const patch = sent.find((r) => r.method === "PATCH");
    expect(patch?.path).toBe(`${BASE}/sandboxtemplates/python/status`);
    expect((patch?.body as unknown[] | undefined)?.[0]).toEqual({
      op: "test",
      path: "/metadata/resourceVersion",
      value: "5",
    });
  });

  it("a tick over one namespace leaves templates alone", async () => {
    const sent: KubeRequest[] = [];
    const report = await tick(depsWithTemplate(sent), { ...options, namespace: "ns" });
    expect(report).toMatchObject({ templates: 0, writes: 0 });
    expect(sent.filter((r) => r.method !== "GET")).toEqual([]);
  });
});

// A host's tick plans from its watch-fed view of the pool pods when the view is in step (ADR
// 0035): no list of pods; out of step (undefined), it lists them as before.

describe("tick: pods from the view", () => {
  /** depsWithOnePool lists pool "ns/p" and one pod of it (when pods are listed); `sent` records the paths. */
  function depsWithOnePool(sent: string[]): HostDeps {
    return depsOver(async (req) => {
      sent.push(req.path);
      const items =
        req.path === `${BASE}/sandboxpools`
          ? [{ metadata: { namespace: "ns", name: "p", uid: "u" }, spec: { replicas: 1 } }]
          : req.path === "/api/v1/pods"
            ? [podOf("listed")]
            : [];
      return { status: 200, body: JSON.stringify({ items, metadata: { resourceVersion: "1" } }) };
    });
  }
  function podOf(name: string) {
    return {
      metadata: {
        namespace: "ns",
        name,
        labels: { "agentbox.navix.sh/sandbox-pool": "p" },
        ownerReferences: [
          {
            apiVersion: "agents.navix.sh/v1alpha1",
            kind: "SandboxPool",
            name: "p",
            uid: "u",
            controller: true,
          },
        ],
      },
    };
  }
  const podsRun = async (
    deps: HostDeps,
    all: () => ReturnType<typeof podOf>[] | undefined,
    of: () => ReturnType<typeof podOf>[] | undefined = all,
  ) => {
    const seen: string[] = [];
    const report = await tick(deps, {
      ...options,
      pods: { all, of },
      run: async (_ns, _name, snapshot) => {
        seen.push(...snapshot.pods.map((p) => p.metadata?.name ?? ""));
        return undefined;
      },
    });
    return { report, seen };
  };

  it("plans from the view's pods and lists none", async () => {
    const sent: string[] = [];
    const { report, seen } = await podsRun(depsWithOnePool(sent), () => [podOf("viewed")]);
    expect(seen).toEqual(["viewed"]);
    expect(sent).not.toContain("/api/v1/pods");
    expect(report.podsFromView).toBe(true);
  });

  it("takes the pool's pods from the view when its run starts", async () => {
    const sent: string[] = [];
    const { seen } = await podsRun(
      depsWithOnePool(sent),
      () => [podOf("at-start")],
      () => [podOf("at-run")],
    );
    expect(seen).toEqual(["at-run"]);
  });

  it("lists the pods when the view is not in step", async () => {
    const sent: string[] = [];
    const { report, seen } = await podsRun(depsWithOnePool(sent), () => undefined);
    expect(seen).toEqual(["listed"]);
    expect(sent).toContain("/api/v1/pods");
    expect(report.podsFromView).toBe(false);
  });
});
