import type { V1Pod } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { PoolPodWatch } from "../../functions/cache/pool-pod-watch.ts";
import { nodeKubeWatch } from "../../hosts/node/kube-transport.ts";
import type { KubeRequest, KubeWatchTransport } from "../../lib/kube/transport.ts";
import { inProcessApi, postCreate, tenantKey } from "./support/in-process-api.ts";
import { kube, until } from "./support/kube.ts";
import { phaseOf, poolTest } from "./support/steps.ts";

// Two hosts over one pool, each with the create route in this process and its own shared watch of
// the pods its waiting creates claimed (ADR 0037): each host's claims carry its claimed-by label,
// so each host's watch receives the events of its own claims only, never those of the other
// host's sandboxes, and its creates still answer once their sandboxes run, or, released while
// they wait (the pod leaves the watch's selection), that they stopped starting.

const t = poolTest("own-claims");
const real = nodeKubeWatch(kube().kc);
const CLAIMED_BY = "agentbox.navix.sh/claimed-by";
const SANDBOX_ID = "agentbox.navix.sh/sandbox-id";
const SLOW = { "kwok.agentbox.dev/pull-delay": "2s" };
const template = (annotations: Record<string, string>) => ({
  template: {
    metadata: { annotations },
    spec: { containers: [{ name: "sandbox", image: "registry.local/sandbox/base:1" }] },
  },
});

/** host is one in-process API whose watch transport records what it opens and each pod event of its pool streams. */
function host(name: string) {
  const opened: KubeRequest[] = [];
  const events: { type: string; pod: string }[] = [];
  const watch: KubeWatchTransport = (req, onEvent, signal) => {
    opened.push(req);
    const ofPool = req.query?.labelSelector?.startsWith("agentbox.navix.sh/sandbox-pool=") ?? false;
    return real(
      req,
      (e) => {
        if (ofPool && e.type !== "BOOKMARK")
          events.push({ type: e.type, pod: (e.object as V1Pod).metadata?.name ?? "" });
        return onEvent(e);
      },
      signal,
    );
  };
  const pods = new PoolPodWatch({ ...t.deps, watch }, { claimedBy: name, lingerMs: 500 });
  const { deps, app } = inProcessApi(t.deps, { pods, watch });
  return { name, opened, events, pods, deps, app, key: "" };
}

const a = host("host-a");
const b = host("host-b");
const K = 4;

beforeAll(async () => {
  a.key = await tenantKey(a.deps, "own-claims-test");
  b.key = a.key;
  await Promise.all([
    t.readyPool("p", 2 * K, template(SLOW)),
    t.readyPool("released", 1, template({ "kwok.agentbox.dev/pull-delay": "5s" })),
  ]);
});

describe("each host's waiting creates watch only the pods its own claims labelled", () => {
  it(`${K} creates on each of two hosts: each answers Running; neither host's watch sees the other's pods`, async () => {
    const creates = [a, b].flatMap((h) =>
      Array.from({ length: K }, async () => {
        const answer = await postCreate(h.app, h.key, { pool: `${t.ns}/p`, wait: true, startupTimeout: 60 });
        return {
          host: h.name,
          status: answer.status,
          view: (await answer.json()) as { phase: string; pod: string; sandboxId: string },
        };
      }),
    );
    const answers = await Promise.all(creates);
    expect(answers.map((x) => x.status)).toEqual(Array(2 * K).fill(201));
    expect(answers.every((x) => x.view.phase === "running")).toBe(true);
    // The apiserver agrees: each answered pod runs that sandbox, labelled with the host that claimed it.
    const live = new Map((await t.pods("p")).map((p) => [p.metadata?.name, p]));
    for (const x of answers) {
      const pod = live.get(x.view.pod) as V1Pod;
      expect(phaseOf(pod)).toBe("running");
      expect(pod.metadata?.labels?.[SANDBOX_ID]).toBe(x.view.sandboxId);
      expect(pod.metadata?.labels?.[CLAIMED_BY]).toBe(x.host);
    }
    for (const h of [a, b]) {
      const own = new Set(answers.filter((x) => x.host === h.name).map((x) => x.view.pod));
      const others = answers.filter((x) => x.host !== h.name).map((x) => x.view.pod);
      // What its watch received: events of its own claims (it followed them), none of the other host's.
      expect(h.events.length).toBeGreaterThan(0);
      expect(h.events.filter((e) => others.includes(e.pod))).toEqual([]);
      expect(h.events.every((e) => own.has(e.pod))).toBe(true);
      // One watch of the pool per host, selecting its claims; no create fell back to a watch of its own.
      const streams = h.opened.filter((r) =>
        r.query?.labelSelector?.startsWith("agentbox.navix.sh/sandbox-pool=p"),
      );
      expect(streams.map((r) => r.query?.labelSelector)).toEqual([
        `agentbox.navix.sh/sandbox-pool=p,${CLAIMED_BY}=${h.name}`,
      ]);
      expect(h.opened.filter((r) => r.query?.fieldSelector !== undefined)).toHaveLength(0);
    }
  }, 120_000);

  it("a create whose sandbox is released while it waits answers that it stopped starting, with the released sandbox", async () => {
    const waiting = postCreate(a.app, a.key, { pool: `${t.ns}/released`, wait: true, startupTimeout: 60 });
    const id = await until("the sandbox starting", 30_000, async () => {
      const [pod] = await t.pods("released");
      return pod && phaseOf(pod) === "starting" ? pod.metadata?.labels?.[SANDBOX_ID] : undefined;
    });
    // Released through the other host: the release takes the claimed-by label off, so host A's
    // watch says DELETED of a pod that is still there. The create reads it rather than call it gone.
    const released = await b.app.request(`/v1/sandboxes/${id}`, {
      method: "DELETE",
      headers: { "x-api-key": b.key },
    });
    expect(released.status).toBeLessThan(300);
    const answer = await waiting;
    expect(answer.status).toBe(504);
    const { error } = (await answer.json()) as { error: { message: string; sandbox: { phase: string } } };
    expect(error.message).toMatch(/stopped starting/);
    expect(error.sandbox.phase).not.toBe("starting");
    expect(a.events.some((e) => e.type === "DELETED")).toBe(true);
    await until("every watch closed after its last follower", 10_000, async () => a.pods.streamCount === 0);
  }, 120_000);
});
