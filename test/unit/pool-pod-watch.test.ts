import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { PoolPodWatch } from "../../functions/cache/pool-pod-watch.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import type { KubeRequest, WatchEvent } from "../../lib/kube/transport.ts";

// The shared watch's bookkeeping over a scripted event stream and scripted reads: which follower
// is handed which version, when it reads its pod, and how the stream starts over. (Against the
// apiserver: the waiting creates of test/integration/pool-pod-watch.test.ts.)

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

function pod(name: string, version: string, phase = "starting", pool = "p"): V1Pod {
  return {
    metadata: {
      name,
      namespace: "ns",
      resourceVersion: version,
      labels: { "agentbox.navix.sh/sandbox-pool": pool, "agentbox.navix.sh/sandbox-phase": phase },
    },
  };
}

/**
 * scripted is a watch whose events the test pushes to the open watches (each records its request
 * and can be ended with an event), and reads answered from `current` (a list: its version).
 */
function scripted(current: Map<string, V1Pod> = new Map(), listVersion = "500") {
  const watches: { req: KubeRequest; onEvent: (e: WatchEvent) => boolean; end: () => void }[] = [];
  const reads: string[] = [];
  const watch = (req: KubeRequest, onEvent: (e: WatchEvent) => boolean, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      const w = { req, onEvent, end: () => resolve() };
      watches.push(w);
      signal.addEventListener("abort", () => resolve());
    });
  const kube = new KubeClient(async (req) => {
    reads.push(`${req.method} ${req.path}${req.query?.limit ? ` limit=${req.query.limit}` : ""}`);
    if (req.path.endsWith("/pods"))
      return { status: 200, body: JSON.stringify({ items: [], metadata: { resourceVersion: listVersion } }) };
    const found = current.get(req.path.split("/").pop() ?? "");
    return found
      ? { status: 200, body: JSON.stringify(found) }
      : { status: 404, body: JSON.stringify({ kind: "Status", code: 404, reason: "NotFound" }) };
  });
  /** push hands an event to the newest open watch; true if it asked to stop. */
  const push = (type: WatchEvent["type"], object: unknown) => {
    const w = watches.at(-1);
    if (w?.onEvent({ type, object } as WatchEvent)) w.end();
  };
  return { watch, kube, watches, reads, push };
}

const settle = () => new Promise((r) => setTimeout(r, 10));

/** collect follows a pod and records the versions handed over, until `until` matches one. */
function collect(pods: PoolPodWatch, from: V1Pod, until: (p: V1Pod | undefined) => boolean) {
  const got: (string | undefined)[] = [];
  const controller = new AbortController();
  const done = pods.follow(
    from,
    (p) => {
      got.push(p ? p.metadata?.resourceVersion : "gone");
      return until(p);
    },
    controller.signal,
  );
  return { got, done, stop: () => controller.abort() };
}

const running = (p: V1Pod | undefined) =>
  p?.metadata?.labels?.["agentbox.navix.sh/sandbox-phase"] === "running";

describe("PoolPodWatch", () => {
  it("serves the followers of one pool from one watch, each only its own pod's newer versions", async () => {
    const s = scripted();
    const pods = new PoolPodWatch({ kube: s.kube, watch: s.watch, log: quiet });
    const a = collect(pods, pod("a", "10"), running);
    const b = collect(pods, pod("b", "12"), running);
    await settle();
    expect(s.watches).toHaveLength(1);
    expect(s.watches[0]?.req.query).toMatchObject({
      labelSelector: "agentbox.navix.sh/sandbox-pool=p",
      resourceVersion: "10",
      allowWatchBookmarks: "true",
    });
    s.push("MODIFIED", pod("b", "11")); // older than b's claim: not b's news
    s.push("MODIFIED", pod("a", "13"));
    s.push("MODIFIED", pod("b", "14", "running"));
    s.push("MODIFIED", pod("a", "15", "running"));
    await Promise.all([a.done, b.done]);
    expect(a.got).toEqual(["13", "15"]);
    expect(b.got).toEqual(["14"]);
    expect(s.reads).toEqual([]); // b's claim (12) is newer than the stream's start (10): no read
  });

  it("hands a follower what the watch already said of its pod, and reads a pod whose claim predates the stream", async () => {
    const current = new Map([["late", pod("late", "9", "running")]]);
    const s = scripted(current);
    const pods = new PoolPodWatch({ kube: s.kube, watch: s.watch, log: quiet });
    const a = collect(pods, pod("a", "10"), running);
    await settle();
    s.push("MODIFIED", pod("c", "20", "running")); // c's create has not begun to follow yet
    const c = collect(pods, pod("c", "18"), running);
    await c.done;
    expect(c.got).toEqual(["20"]);
    // Claimed at 8, before the stream's start (10): its versions up to 10 may have gone by unseen.
    const late = collect(pods, pod("late", "8"), running);
    await late.done;
    expect(late.got).toEqual(["9"]);
    expect(s.reads).toEqual(["GET /api/v1/namespaces/ns/pods/late"]);
    a.stop();
    await a.done;
  });

  it("ends a follower whose pod is deleted, and ignores bookmarks except as the version to resume from", async () => {
    const s = scripted();
    const pods = new PoolPodWatch({ kube: s.kube, watch: s.watch, log: quiet });
    const a = collect(pods, pod("a", "10"), (p) => p === undefined);
    await settle();
    s.push("BOOKMARK", { metadata: { resourceVersion: "40" } });
    s.watches[0]?.end(); // the apiserver ends the watch (timeoutSeconds): resumed from the bookmark
    await new Promise((r) => setTimeout(r, 1200));
    expect(s.watches.map((w) => w.req.query?.resourceVersion)).toEqual(["10", "40"]);
    s.push("DELETED", pod("a", "41"));
    await a.done;
    expect(a.got).toEqual(["gone"]);
  });

  it("starts over after a 410: resumes from a fresh list's version and reads every follower's pod", async () => {
    const current = new Map([
      ["a", pod("a", "300", "running")],
      ["b", pod("b", "200")],
    ]);
    const s = scripted(current, "500");
    const pods = new PoolPodWatch({ kube: s.kube, watch: s.watch, log: quiet });
    const a = collect(pods, pod("a", "10"), running);
    const b = collect(pods, pod("b", "11"), running);
    await settle();
    s.push("ERROR", { kind: "Status", code: 410, reason: "Expired" });
    await a.done;
    expect(a.got).toEqual(["300"]);
    await settle();
    expect(b.got).toEqual(["200"]);
    expect(s.reads).toEqual([
      "GET /api/v1/namespaces/ns/pods limit=1",
      "GET /api/v1/namespaces/ns/pods/a",
      "GET /api/v1/namespaces/ns/pods/b",
    ]);
    await new Promise((r) => setTimeout(r, 1200));
    expect(s.watches.at(-1)?.req.query?.resourceVersion).toBe("500");
    s.push("MODIFIED", pod("b", "199", "running")); // older than what b's read gave: not news
    s.push("MODIFIED", pod("b", "501", "running"));
    await b.done;
    expect(b.got).toEqual(["200", "501"]);
  });

  it("keeps a stream open for lingerMs after its last follower, then closes it; the next follower opens another", async () => {
    const s = scripted();
    const pods = new PoolPodWatch({ kube: s.kube, watch: s.watch, log: quiet }, { lingerMs: 50 });
    const a = collect(pods, pod("a", "10"), running);
    await settle();
    s.push("MODIFIED", pod("a", "11", "running"));
    await a.done;
    const b = collect(pods, pod("b", "12"), running); // within the linger: the same watch
    await settle();
    expect(s.watches).toHaveLength(1);
    b.stop();
    await b.done;
    await new Promise((r) => setTimeout(r, 100));
    expect(pods.streamCount).toBe(0);
    const c = collect(pods, pod("c", "30"), running);
    await settle();
    expect(s.watches.map((w) => w.req.query?.resourceVersion)).toEqual(["10", "30"]);
    c.stop();
    await c.done;
    pods.close();
  });

  it("forgets versions older than keepMs and reads the pod of a follower that would have needed one", async () => {
    const current = new Map([["c", pod("c", "20", "running")]]);
    const s = scripted(current);
    const pods = new PoolPodWatch({ kube: s.kube, watch: s.watch, log: quiet }, { keepMs: 20 });
    const a = collect(pods, pod("a", "10"), running);
    await settle();
    s.push("MODIFIED", pod("c", "20", "running"));
    await new Promise((r) => setTimeout(r, 40));
    s.push("MODIFIED", pod("d", "21")); // past keepMs: c's version is forgotten
    const c = collect(pods, pod("c", "15"), running);
    await c.done;
    expect(c.got).toEqual(["20"]);
    expect(s.reads).toEqual(["GET /api/v1/namespaces/ns/pods/c"]);
    a.stop();
    await a.done;
    pods.close();
  });

  /** ours is a pod as this host's claim left it: carrying its claimed-by label. */
  const ours = (name: string, version: string, phase = "starting", by = "host-a") => {
    const p = pod(name, version, phase);
    p.metadata!.labels!["agentbox.navix.sh/claimed-by"] = by;
    return p;
  };

  it("with claimedBy, selects only this host's claims; a pod claimed without its label gets a watch of its own", async () => {
    const s = scripted();
    const pods = new PoolPodWatch({ kube: s.kube, watch: s.watch, log: quiet }, { claimedBy: "host-a" });
    const a = collect(pods, ours("a", "10"), running);
    await settle();
    expect(s.watches[0]?.req.query).toMatchObject({
      labelSelector: "agentbox.navix.sh/sandbox-pool=p,agentbox.navix.sh/claimed-by=host-a",
      resourceVersion: "10",
    });
    const other = collect(pods, ours("b", "11", "starting", "host-b"), running);
    const unlabelled = collect(pods, pod("c", "12"), running);
    await settle();
    expect(s.watches.slice(1).map((w) => w.req.query?.fieldSelector)).toEqual([
      "metadata.name=b",
      "metadata.name=c",
    ]);
    expect(pods.streamCount).toBe(1);
    s.watches[0]?.onEvent({ type: "MODIFIED", object: ours("a", "13", "running") });
    await a.done;
    expect(a.got).toEqual(["13"]);
    other.stop();
    unlabelled.stop();
    await Promise.all([other.done, unlabelled.done]);
    pods.close();
  });

  it("with claimedBy, a DELETED pod may only have stopped matching: the follower gets what a read says", async () => {
    // a was released (its claimed-by removed): the apiserver says DELETED with a's previous content.
    const current = new Map([["a", pod("a", "20", "stopping")]]);
    const s = scripted(current);
    const pods = new PoolPodWatch({ kube: s.kube, watch: s.watch, log: quiet }, { claimedBy: "host-a" });
    const a = collect(pods, ours("a", "10"), (p) => p !== undefined && !running(p));
    const b = collect(pods, ours("b", "11"), (p) => p === undefined);
    await settle();
    s.push("DELETED", ours("a", "20"));
    await a.done;
    expect(a.got).toEqual(["20"]); // the stopping pod, not "gone": its create says why it ended
    s.push("DELETED", ours("b", "21")); // b is really gone: the read finds nothing
    await b.done;
    expect(b.got).toEqual(["gone"]);
    expect(s.reads).toEqual(["GET /api/v1/namespaces/ns/pods/a", "GET /api/v1/namespaces/ns/pods/b"]);
    // A follower that comes after the stream saw its pod leave reads it too.
    current.set("c", pod("c", "30", "stopping"));
    s.push("DELETED", ours("c", "30"));
    const c = collect(pods, ours("c", "25"), (p) => p !== undefined);
    await c.done;
    expect(c.got).toEqual(["30"]);
    pods.close();
  });

  it("follows a pod of no pool, or with a version that is not a number, on a watch of its own", async () => {
    const s = scripted();
    const pods = new PoolPodWatch({ kube: s.kube, watch: s.watch, log: quiet });
    const odd = pod("x", "abc");
    const x = collect(pods, odd, running);
    await settle();
    expect(s.watches[0]?.req.query).toMatchObject({
      fieldSelector: "metadata.name=x",
      resourceVersion: "abc",
    });
    expect(pods.streamCount).toBe(0);
    x.stop();
    await x.done;
  });
});
