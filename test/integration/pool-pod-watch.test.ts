import type { V1Pod } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { PoolPodWatch } from "../../functions/cache/pool-pod-watch.ts";
import { nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import type { KubeRequest } from "../../lib/kube/transport.ts";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { kube, until } from "./support/kube.ts";
import { phaseOf, poolTest } from "./support/steps.ts";

// Creates with `wait` against the create route running in this process, with the host's shared
// watch of a pool's pods (ADR 0023) over a watch transport that records what it opens: however
// many creates wait, the pool costs one watch, and each create still answers once its own sandbox
// runs (or, released meanwhile, that it stopped starting).

const t = poolTest("pod-watch");
const opened: KubeRequest[] = [];
const real = nodeKubeWatch(kube().kc);
const watch = (
  req: KubeRequest,
  ...rest: Parameters<typeof real> extends [unknown, ...infer R] ? R : never
) => {
  opened.push(req);
  return real(req, ...rest);
};
const pods = new PoolPodWatch({ ...t.deps, watch }, { lingerMs: 500 });
const { deps, app } = inProcessApi(t.deps, { pods, watch });
const N = 20;
let key = "";

const create = (body: Record<string, unknown>) => postCreate(app, key, body);

beforeAll(async () => {
  key = await tenantKey(deps, "pod-watch-test");
  await t.readyPool("p", N);
});

describe("creates waiting for Running share one watch of their pool's pods", () => {
  it(`${N} concurrent creates with wait: each answers Running with its own pod, over one watch`, async () => {
    const answers = await Promise.all(
      Array.from({ length: N }, () => create({ pool: `${t.ns}/p`, wait: true, startupTimeout: 60 })),
    );
    const bodies = await Promise.all(answers.map(async (a) => ({ status: a.status, body: await a.json() })));
    expect(bodies.map((b) => b.status)).toEqual(Array(N).fill(201));
    const views = bodies.map((b) => b.body as { phase: string; pod: string; sandboxId: string });
    expect(views.every((v) => v.phase === "running")).toBe(true);
    expect(new Set(views.map((v) => v.pod)).size).toBe(N);
    // What the apiserver says agrees: each answered pod runs that sandbox.
    const live = new Map((await t.pods("p")).map((p) => [p.metadata?.name, p]));
    for (const v of views) {
      expect(live.get(v.pod) && phaseOf(live.get(v.pod) as V1Pod)).toBe("running");
      expect(live.get(v.pod)?.metadata?.labels?.["agentbox.navix.sh/sandbox-id"]).toBe(v.sandboxId);
    }
    const ofPool = opened.filter((r) => r.query?.labelSelector === "agentbox.navix.sh/sandbox-pool=p");
    expect(ofPool).toHaveLength(1);
    expect(opened.filter((r) => r.query?.fieldSelector !== undefined)).toHaveLength(0);
  }, 120_000);

  it("a create whose sandbox is released while it waits answers that it stopped starting; the watch then closes", async () => {
    await t.readyPool("slow", 1, {
      template: {
        metadata: { annotations: { "kwok.agentbox.dev/pull-delay": "5s" } },
        spec: { containers: [{ name: "sandbox", image: "registry.local/sandbox/base:1" }] },
      },
    });
    const waiting = create({ pool: `${t.ns}/slow`, wait: true, startupTimeout: 60 });
    const id = await until("the sandbox starting", 30_000, async () => {
      const [pod] = await t.pods("slow");
      return pod && phaseOf(pod) === "starting"
        ? pod.metadata?.labels?.["agentbox.navix.sh/sandbox-id"]
        : undefined;
    });
    const released = await app.request(`/v1/sandboxes/${id}`, {
      method: "DELETE",
      headers: { "x-api-key": key },
    });
    expect(released.status).toBeLessThan(300);
    const answer = await waiting;
    expect(answer.status).toBe(504);
    expect(((await answer.json()) as { error: { message: string } }).error.message).toMatch(
      /stopped starting/,
    );
    expect(
      opened.filter((r) => r.query?.labelSelector === "agentbox.navix.sh/sandbox-pool=slow"),
    ).toHaveLength(1);
    await until("every watch closed after its last follower", 10_000, async () => pods.streamCount === 0);
  }, 120_000);
});
