import type { V1Pod } from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { describe, expect, it, vi } from "vitest";
import { PoolPodsView } from "../../functions/cache/pool-pods-view.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import type { KubeRequest, WatchEvent } from "../../lib/kube/transport.ts";
import { createMetrics } from "../../lib/metrics/metrics.ts";

// The view's bookkeeping over a scripted list and watch: when it is in step, what a watch event, a
// 410 or a failed watch does to what it holds. (Against the apiserver, through the tick:
// test/integration/tick-pods-view.test.ts.)

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

function pod(name: string, version: string, namespace = "ns", pool = "p"): V1Pod {
  return {
    metadata: {
      name,
      namespace,
      resourceVersion: version,
      labels: { "agentbox.navix.sh/sandbox-pool": pool },
    },
  };
}

/** scripted answers every list with `listed` (version "100") and lets the test drive the watches. */
function scripted(listed: V1Pod[]) {
  const lists: KubeRequest[] = [];
  const watches: {
    req: KubeRequest;
    onEvent: (e: WatchEvent) => boolean;
    end: () => void;
    fail: (e: Error) => void;
  }[] = [];
  const kube = new KubeClient(async (req) => {
    lists.push(req);
    return { status: 200, body: JSON.stringify({ items: listed, metadata: { resourceVersion: "100" } }) };
  });
  const watch = (req: KubeRequest, onEvent: (e: WatchEvent) => boolean, signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      watches.push({ req, onEvent, end: () => resolve(), fail: reject });
      signal.addEventListener("abort", () => resolve());
    });
  const push = (type: WatchEvent["type"], object: unknown) => {
    const w = watches.at(-1);
    if (w?.onEvent({ type, object } as WatchEvent)) w.end();
  };
  /** pushUnread sends a change whose object counts its reads (and throws when `broken`). */
  const pushUnread = (type: WatchEvent["type"], p: V1Pod, broken = false) => {
    const reads = { count: 0 };
    const meta = {
      name: p.metadata?.name ?? "",
      namespace: p.metadata?.namespace ?? "",
      resourceVersion: p.metadata?.resourceVersion ?? "",
    };
    const event: WatchEvent = {
      type,
      meta,
      get object() {
        reads.count++;
        if (broken) throw new Error("a watch event that is not JSON");
        return p;
      },
    };
    const w = watches.at(-1);
    if (w?.onEvent(event)) w.end();
    return reads;
  };
  return { kube, watch, lists, watches, push, pushUnread };
}

const settle = () => new Promise((r) => setTimeout(r, 10));

/** listedView is a view over a scripted `listed` that has listed and watches. */
async function listedView(listed: V1Pod[]) {
  const s = scripted(listed);
  const view = new PoolPodsView({ kube: s.kube, watch: s.watch, log: quiet });
  await settle();
  return { s, view };
}
const names = (pods: V1Pod[] | undefined) => pods?.map((p) => p.metadata?.name).sort();

describe("PoolPodsView", () => {
  it("is out of step until it has listed, then watches every pool pod from the list's version", async () => {
    const s = scripted([pod("a", "90"), pod("b", "95")]);
    const view = new PoolPodsView({ kube: s.kube, watch: s.watch, log: quiet });
    expect(view.snapshot()).toBeUndefined();
    await settle();
    expect(names(view.snapshot())).toEqual(["a", "b"]);
    expect(s.lists[0]?.path).toBe("/api/v1/pods");
    expect(s.lists[0]?.query).toMatchObject({ labelSelector: "agentbox.navix.sh/sandbox-pool" });
    expect(s.watches[0]?.req.query).toMatchObject({
      labelSelector: "agentbox.navix.sh/sandbox-pool",
      resourceVersion: "100",
    });
    view.close();
  });

  it("follows what the watch reports: added, changed, deleted; the same name in two namespaces is two pods", async () => {
    const { s, view } = await listedView([pod("a", "90")]);
    s.push("ADDED", pod("b", "101"));
    s.push("ADDED", pod("b", "102", "other"));
    s.push("MODIFIED", pod("a", "103"));
    s.push("DELETED", pod("b", "104"));
    const held = view.snapshot() ?? [];
    expect(
      held.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}@${p.metadata?.resourceVersion}`).sort(),
    ).toEqual(["ns/a@103", "other/b@102"]);
    view.close();
  });

  it("podsOf holds each pool's pods, by the pod's pool label as last reported", async () => {
    const s = scripted([pod("a", "90"), pod("b", "91", "ns", "q")]);
    const view = new PoolPodsView({ kube: s.kube, watch: s.watch, log: quiet });
    expect(view.podsOf("ns", "p")).toBeUndefined();
    await settle();
    expect(names(view.podsOf("ns", "p"))).toEqual(["a"]);
    s.push("MODIFIED", pod("b", "101", "ns", "p")); // relabelled from q to p
    expect(names(view.podsOf("ns", "p"))).toEqual(["a", "b"]);
    expect(view.podsOf("ns", "q")).toEqual([]);
    expect(view.podsOf("other", "p")).toEqual([]);
    expect(names(view.snapshot())).toEqual(["a", "b"]);
    view.close();
  });

  it("after a 410 it is out of step until it has listed again, and resumes from the new list", async () => {
    const { s, view } = await listedView([pod("a", "90")]);
    s.push("ERROR", { kind: "Status", code: 410, reason: "Expired" });
    expect(view.snapshot()).toBeUndefined();
    // A watch that ended at once is paced before the view lists again.
    await vi.waitFor(() => expect(names(view.snapshot())).toEqual(["a"]), { timeout: 5000 });
    expect(s.lists).toHaveLength(2);
    expect(s.watches.at(-1)?.req.query?.resourceVersion).toBe("100");
    view.close();
  });

  it("a failed watch puts it out of step, and it lists again", async () => {
    const { s, view } = await listedView([pod("a", "90")]);
    s.watches[0]?.fail(new Error("connection reset"));
    await settle();
    expect(view.snapshot()).toBeUndefined();
    await vi.waitFor(() => expect(names(view.snapshot())).toEqual(["a"]), { timeout: 5000 });
    expect(s.lists).toHaveLength(2);
    view.close();
  });

  it("close stops the watch and the view answers out of step", async () => {
    const { s, view } = await listedView([pod("a", "90")]);
    view.close();
    await settle();
    expect(view.snapshot()).toBeUndefined();
    expect(s.watches).toHaveLength(1);
  });

  it("caughtUp resolves once the watch has passed a version (bookmarks count), false when it cannot", async () => {
    const { s, view } = await listedView([pod("a", "90")]);
    // Listed at "100": a write the apiserver reported at 100 or before is in the view.
    await expect(view.caughtUp("100", 0)).resolves.toBe(true);
    const modified = view.caughtUp("101", 60_000);
    const bookmarked = view.caughtUp("150", 60_000);
    s.push("MODIFIED", pod("a", "101"));
    await expect(modified).resolves.toBe(true);
    expect(view.podsOf("ns", "p")?.[0]?.metadata?.resourceVersion).toBe("101");
    s.push("MODIFIED", pod("a", "149"));
    s.push("BOOKMARK", { metadata: { resourceVersion: "150" } });
    s.push("MODIFIED", pod("b", "151"));
    await expect(bookmarked).resolves.toBe(true);
    // Not reached within the bound, a version it cannot order, a closed view: false.
    await expect(view.caughtUp("999", 5)).resolves.toBe(false);
    await expect(view.caughtUp("v150", 60_000)).resolves.toBe(false);
    const pending = view.caughtUp("999", 60_000);
    view.close();
    await expect(pending).resolves.toBe(false);
  });

  it("parses a changed pod only when the view is read, and only its last change", async () => {
    const { s, view } = await listedView([pod("a", "90")]);
    const first = s.pushUnread("MODIFIED", pod("a", "101"));
    const second = s.pushUnread("MODIFIED", pod("a", "102"));
    const gone = s.pushUnread("ADDED", pod("b", "103"));
    const deleted = s.pushUnread("DELETED", pod("b", "104"));
    expect([first.count, second.count, gone.count, deleted.count]).toEqual([0, 0, 0, 0]);
    expect(view.podsOf("ns", "p")?.map((p) => p.metadata?.resourceVersion)).toEqual(["102"]);
    expect([first.count, second.count, gone.count, deleted.count]).toEqual([0, 1, 0, 0]);
    view.podsOf("ns", "p");
    expect(second.count).toBe(1);
    view.close();
  });

  it("a change it cannot read puts it out of step; it lists again at the watch's next event", async () => {
    const { s, view } = await listedView([pod("a", "90")]);
    s.pushUnread("MODIFIED", pod("a", "101"), true);
    expect(view.snapshot()).toBeUndefined();
    expect(s.lists).toHaveLength(1);
    s.push("MODIFIED", pod("a", "102"));
    await vi.waitFor(() => expect(names(view.snapshot())).toEqual(["a"]), { timeout: 5000 });
    expect(s.lists).toHaveLength(2);
    view.close();
  });

  it("counts its lists and events in the host's metrics, under the cache's name", async () => {
    const s = scripted([pod("a", "90")]);
    const metrics = createMetrics(new Registry());
    const view = new PoolPodsView({ kube: s.kube, watch: s.watch, log: quiet, metrics });
    await settle();
    s.push("MODIFIED", pod("a", "101"));
    const lists = (await metrics.informers.lists.get()).values;
    const events = (await metrics.informers.events.get()).values;
    expect(lists).toEqual([{ labels: { informer: "pool pods", cause: "start" }, value: 1 }]);
    expect(events).toEqual([{ labels: { informer: "pool pods", type: "MODIFIED" }, value: 1 }]);
    view.close();
  });
});
