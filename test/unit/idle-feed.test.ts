import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { IdleFeed } from "../../functions/cache/idle-feed.ts";
import { homeDistance, ringPoint } from "../../lib/claims/claim-home.ts";
import { SCALE_DOWN_PROTECTED_ANNOTATION } from "../../lib/crd/keys.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import type { KubeRequest, WatchEvent } from "../../lib/kube/transport.ts";
import { poolOwnerReference } from "../../lib/membership/pod-ownership.ts";
import { autoscalingGroup } from "../support/autoscaling-group.ts";
import { asMember, envOf } from "../support/env-member.ts";

// The feed's bookkeeping over a scripted list and watch: when it is ready, which pod each create
// is handed, and what a lost or kept claim, a watch event or a 410 does to what it offers.
// (Against the apiserver: test/integration/idle-feed.test.ts.)

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const pool = {
  metadata: { name: "p", namespace: "ns", uid: "pool-uid" },
  spec: { replicas: 3 },
} as unknown as SandboxPool;
/** OWNER is the controller reference of the pool's own pods (render-pod.ts writes it). */
const OWNER = poolOwnerReference(pool);
const now = new Date("2026-11-24T12:00:00Z");

function idlePod(
  name: string,
  version = "1",
  extra: { ready?: boolean; markedAt?: string; foreign?: boolean } = {},
): V1Pod {
  return {
    metadata: {
      name,
      namespace: "ns",
      resourceVersion: version,
      labels: { "agentbox.navix.sh/sandbox-pool": "p", "agentbox.navix.sh/sandbox-phase": "idle" },
      ownerReferences: extra.foreign ? [] : [OWNER],
      ...(extra.markedAt ? { annotations: { [SCALE_DOWN_PROTECTED_ANNOTATION]: extra.markedAt } } : {}),
    },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: extra.ready === false ? "False" : "True" }],
    },
  };
}

/** scripted answers lists with `listed` (version "100") and lets the test push watch events. */
function scripted(listed: V1Pod[]) {
  const watches: { req: KubeRequest; onEvent: (e: WatchEvent) => boolean; end: () => void }[] = [];
  let lists = 0;
  const kube = new KubeClient(async () => {
    lists++;
    return { status: 200, body: JSON.stringify({ items: listed, metadata: { resourceVersion: "100" } }) };
  });
  const watch = (req: KubeRequest, onEvent: (e: WatchEvent) => boolean, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      watches.push({ req, onEvent, end: () => resolve() });
      signal.addEventListener("abort", () => resolve());
    });
  const push = (type: WatchEvent["type"], object: unknown) => {
    const w = watches.at(-1);
    if (w?.onEvent({ type, object } as WatchEvent)) w.end();
  };
  return { kube, watch, watches, push, lists: () => lists };
}

const settle = () => new Promise((r) => setTimeout(r, 10));
const first = () => 0;

/** readyFeed is a feed over `listed` that has listed and watches. */
async function readyFeed(listed: V1Pod[]) {
  const s = scripted(listed);
  const feed = new IdleFeed({ kube: s.kube, watch: s.watch, log: quiet });
  expect(feed.ready("ns", "p")).toBe(false);
  await settle();
  expect(feed.ready("ns", "p")).toBe(true);
  return { ...s, feed };
}

describe("IdleFeed", () => {
  it("is ready once it has listed, then watches from the list's version; each pod to one create at a time", async () => {
    const { feed, watches, lists } = await readyFeed([idlePod("a"), idlePod("b")]);
    expect(lists()).toBe(1);
    expect(watches[0]?.req.query).toMatchObject({
      labelSelector: "agentbox.navix.sh/sandbox-pool=p,agentbox.navix.sh/sandbox-phase=idle",
      resourceVersion: "100",
    });
    const one = feed.take(pool, now, first);
    const two = feed.take(pool, now, first);
    expect([one?.pod.metadata?.name, two?.pod.metadata?.name].sort()).toEqual(["a", "b"]);
    expect(feed.take(pool, now, first)).toBeUndefined();
    one?.settle("kept"); // e.g. the claim failed: the pod is on offer again
    expect(feed.take(pool, now, first)?.pod.metadata?.name).toBe(one?.pod.metadata?.name);
    feed.close();
  });

  it("with a home, hands out the pods nearest it first; a kept pod goes behind the others until a newer version comes", async () => {
    const s = scripted(["a", "b", "c", "d", "e"].map((n) => idlePod(n)));
    const feed = new IdleFeed({ kube: s.kube, watch: s.watch, log: quiet }, { home: "host-a" });
    feed.ready("ns", "p");
    await settle();
    const byDistance = ["a", "b", "c", "d", "e"].sort(
      (x, y) => homeDistance(x, ringPoint("host-a")) - homeDistance(y, ringPoint("host-a")),
    );
    const random = () => 0.99; // ignored: every pod is ranked
    const nearest = feed.take(pool, now, random);
    expect(nearest?.pod.metadata?.name).toBe(byDistance[0]);
    nearest?.settle("kept"); // its claim failed: the next create tries another pod first
    const next = feed.take(pool, now, random);
    expect(next?.pod.metadata?.name).toBe(byDistance[1]);
    next?.settle("won");
    expect(feed.take(pool, now, random)?.pod.metadata?.name).toBe(byDistance[2]);
    s.push("MODIFIED", idlePod(byDistance[0] ?? "", "2")); // a newer version: ranked afresh
    expect(feed.take(pool, now, random)?.pod.metadata?.name).toBe(byDistance[0]);
    feed.close();
  });

  it("drops a version a claim lost or won; a newer version the watch reports is offered again", async () => {
    const { feed, push } = await readyFeed([idlePod("a", "5")]);
    feed.take(pool, now, first)?.settle("lost");
    expect(feed.take(pool, now, first)).toBeUndefined();
    push("MODIFIED", idlePod("a", "7"));
    const again = feed.take(pool, now, first);
    expect(again?.pod.metadata?.resourceVersion).toBe("7");
    again?.settle("won");
    expect(feed.take(pool, now, first)).toBeUndefined();
    // A version that came while a claim of the older one was under way outlives that claim's loss.
    push("MODIFIED", idlePod("a", "8"));
    const held = feed.take(pool, now, first);
    push("MODIFIED", idlePod("a", "9"));
    held?.settle("lost");
    expect(feed.take(pool, now, first)?.pod.metadata?.resourceVersion).toBe("9");
    feed.close();
  });

  it("offers no pod that is not Ready, was deleted or is not the pool's, and marked pods only inside their window, after the unmarked", async () => {
    // A pool of no autoscaling group: a 10 s protection window (the CRD's default).
    const inside = new Date(now.getTime() - 5_000).toISOString();
    const past = new Date(now.getTime() - 10_000).toISOString();
    const { feed, push } = await readyFeed([
      idlePod("marked", "1", { markedAt: inside }),
      idlePod("expired", "1", { markedAt: past }),
      idlePod("plain"),
      idlePod("cold", "1", { ready: false }),
      idlePod("forged", "1", { foreign: true }),
    ]);
    expect(feed.take(pool, now, first)?.pod.metadata?.name).toBe("plain");
    expect(feed.take(pool, now, first)?.pod.metadata?.name).toBe("marked");
    expect(feed.take(pool, now, first)).toBeUndefined();
    push("MODIFIED", idlePod("cold", "2"));
    push("DELETED", idlePod("cold", "3"));
    expect(feed.take(pool, now, first)).toBeUndefined();
    feed.close();
  });

  it("a pod that leaves the feed (claimed, or deleted) goes by name: its event is never parsed", async () => {
    const { feed, watches } = await readyFeed([idlePod("a"), idlePod("b")]);
    const left: WatchEvent = {
      type: "DELETED",
      meta: { name: "a", namespace: "ns", resourceVersion: "3" },
      get object(): unknown {
        throw new Error("the feed read a pod that left");
      },
    };
    expect(watches.at(-1)?.onEvent(left)).toBe(false);
    expect(feed.take(pool, now, first)?.pod.metadata?.name).toBe("b");
    expect(feed.take(pool, now, first)).toBeUndefined();
    feed.close();
  });

  it("a pod whose event cannot be read leaves the feed, and the watch goes on", async () => {
    const { feed, watches, push, lists } = await readyFeed([idlePod("a"), idlePod("b")]);
    const unreadable: WatchEvent = {
      type: "MODIFIED",
      meta: { name: "a", namespace: "ns", resourceVersion: "3" },
      get object(): unknown {
        throw new Error("a watch event that is not JSON");
      },
    };
    expect(watches.at(-1)?.onEvent(unreadable)).toBe(false);
    expect(feed.take(pool, now, first)?.pod.metadata?.name).toBe("b");
    expect(feed.take(pool, now, first)).toBeUndefined();
    push("MODIFIED", idlePod("a", "4")); // a later event says it is idle again
    expect(feed.take(pool, now, first)?.pod.metadata?.resourceVersion).toBe("4");
    expect([watches.length, lists()]).toEqual([1, 1]);
    feed.close();
  });

  it("a member pool's marked pods are offered for its Env group's protection window (issue #26)", async () => {
    const member = asMember(pool, "default");
    const env = envOf(autoscalingGroup({ down: { protectionWindowSeconds: 60 } }));
    const { feed } = await readyFeed([
      idlePod("marked", "1", { markedAt: new Date(now.getTime() - 30_000).toISOString() }),
    ]);
    // Without the Env: the CRD's 10 s are over. With it: 60 s, so the pod is still on offer.
    expect(feed.take(member, now, first)).toBeUndefined();
    expect(feed.take(member, now, first, env)?.pod.metadata?.name).toBe("marked");
    feed.close();
  });

  it("after a 410 it is not ready until it has listed again", async () => {
    const { feed, push, lists } = await readyFeed([idlePod("a")]);
    push("ERROR", { kind: "Status", code: 410, reason: "Expired" });
    expect(feed.ready("ns", "p")).toBe(false);
    expect(feed.take(pool, now, first)).toBeUndefined();
    await new Promise((r) => setTimeout(r, 1200)); // a watch that ended at once is paced
    expect(lists()).toBe(2);
    expect(feed.ready("ns", "p")).toBe(true);
    feed.close();
  });

  it("settled: the create that opens a feed does not wait; the next ones wait for its first list, at most waitMs", async () => {
    let answer: () => void = () => {};
    const gate = new Promise<void>((r) => {
      answer = r;
    });
    let lists = 0;
    const kube = new KubeClient(async () => {
      lists++;
      await gate;
      return {
        status: 200,
        body: JSON.stringify({ items: [idlePod("a")], metadata: { resourceVersion: "100" } }),
      };
    });
    const s = scripted([]);
    const feed = new IdleFeed({ kube, watch: s.watch, log: quiet });
    expect(await feed.settled("ns", "p")).toBe(false); // the opener lists candidates itself
    expect(await feed.settled("ns", "p", 20)).toBe(false); // the list is slow: it stops waiting
    const waiting = feed.settled("ns", "p");
    answer();
    expect(await waiting).toBe(true);
    expect(lists).toBe(1);
    expect(feed.take(pool, now, first)?.pod.metadata?.name).toBe("a");
    feed.close();
  });

  it("settled: a feed whose first list failed keeps no create waiting (each lists for itself until a list succeeds)", async () => {
    const kube = new KubeClient(async () => ({
      status: 500,
      body: JSON.stringify({ kind: "Status", code: 500, reason: "InternalError" }),
    }));
    const s = scripted([]);
    const feed = new IdleFeed({ kube, watch: s.watch, log: quiet });
    expect(await feed.settled("ns", "p")).toBe(false);
    // Without the failure ending the wait this would hang for the minute asked (the test's timeout ends it).
    expect(await feed.settled("ns", "p", 60_000)).toBe(false);
    feed.close();
  });

  it("closes a feed no create asked for within lingerMs", async () => {
    const s = scripted([idlePod("a")]);
    const feed = new IdleFeed({ kube: s.kube, watch: s.watch, log: quiet }, { lingerMs: 1000 });
    feed.ready("ns", "p");
    await settle();
    expect(s.watches[0]?.req.query?.timeoutSeconds).toBe("1");
    await new Promise((r) => setTimeout(r, 1100));
    s.watches[0]?.end(); // the apiserver ends the watch at its timeout
    await settle();
    expect(feed.feedCount).toBe(0);
  });
});
