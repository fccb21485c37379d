// The waiter's handling of watch events, with the watch stream and the one read it may make
// scripted (this tests our loop, not Kubernetes; the integration tests run it against the real
// apiserver).
import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { waitForRunning } from "../../functions/api/wait-running.ts";
import { hostDeps } from "../../functions/host-deps.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import type { KubeRequest, WatchEvent } from "../../lib/kube/transport.ts";
import { referenceDigestResolver } from "../../lib/lifecycle/digest-resolver.ts";

const pod = (phase: string, resourceVersion: string): V1Pod => ({
  metadata: {
    name: "p-0",
    namespace: "ns",
    resourceVersion,
    labels: { "agentbox.navix.sh/sandbox-id": "sbx-1", "agentbox.navix.sh/sandbox-phase": phase },
  },
});
const pool = { metadata: { name: "p", namespace: "ns" }, spec: {} } as unknown as SandboxPool;

/** depsWith scripts one list of events per watch call and answers gets of the pod with `current`. */
function depsWith(watches: WatchEvent[][], current: V1Pod) {
  const watched: KubeRequest[] = [];
  const read: string[] = [];
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  const deps = hostDeps({
    history: {
      put: async () => "inserted",
      get: async () => undefined,
      query: async () => ({ records: [] }),
      putEvent: async () => "inserted",
      events: async () => [],
    },
    kube: new KubeClient(async (req) => {
      read.push(`${req.method} ${req.path}`);
      return { status: 200, body: JSON.stringify(current) };
    }),
    now: () => new Date("2026-11-23T12:00:00Z"),
    log: quiet,
    digests: referenceDigestResolver,
    reporter: { controller: "test", instance: "test" },
    watch: async (req: KubeRequest, onEvent: (e: WatchEvent) => boolean) => {
      watched.push(req);
      for (const e of watches.shift() ?? []) if (onEvent(e)) return;
    },
  });
  return { deps, watched, read };
}

describe("waitForRunning", () => {
  it("starts over from a read when the watch cannot go on (410 Gone), then resumes from that version", async () => {
    const gone: WatchEvent = { type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } };
    const { deps, watched, read } = depsWith(
      [[gone], [{ type: "MODIFIED", object: pod("running", "31") }]],
      pod("starting", "30"),
    );
    const outcome = await waitForRunning(deps, pod("starting", "10"), pool, 5000);
    expect(outcome.ok).toBe(true);
    expect(read).toEqual(["GET /api/v1/namespaces/ns/pods/p-0"]);
    expect(watched.map((w) => w.query?.resourceVersion)).toEqual(["10", "30"]);
  });

  it("resumes from a bookmark's version and leaves the pods it holds untouched", async () => {
    const claimed = pod("starting", "10");
    const { deps, watched } = depsWith(
      [
        [{ type: "BOOKMARK", object: { metadata: { resourceVersion: "55" } } }],
        [{ type: "MODIFIED", object: pod("running", "56") }],
      ],
      claimed,
    );
    const outcome = await waitForRunning(deps, claimed, pool, 5000);
    expect(outcome.ok).toBe(true);
    expect(watched.map((w) => w.query?.resourceVersion)).toEqual(["10", "55"]);
    expect(claimed.metadata?.resourceVersion).toBe("10");
  });

  it("ends when the pod is deleted or another sandbox took it", async () => {
    const deleted = depsWith([[{ type: "DELETED", object: pod("starting", "11") }]], pod("starting", "10"));
    expect(await waitForRunning(deleted.deps, pod("starting", "10"), pool, 5000)).toMatchObject({
      ok: false,
      reason: "ended",
    });
    const other = { ...pod("starting", "12") };
    other.metadata = {
      ...other.metadata,
      labels: { ...other.metadata?.labels, "agentbox.navix.sh/sandbox-id": "sbx-2" },
    };
    const taken = depsWith([[{ type: "MODIFIED", object: other }]], pod("starting", "10"));
    expect(await waitForRunning(taken.deps, pod("starting", "10"), pool, 5000)).toMatchObject({
      ok: false,
      reason: "ended",
    });
  });

  it("reopens a watch that ends at once only after growing pauses, never in a tight loop", async () => {
    const { deps, watched } = depsWith([], pod("starting", "10"));
    const outcome = await waitForRunning(deps, pod("starting", "10"), pool, 1600);
    expect(outcome.ok).toBe(false);
    // 100 + 200 + 400 + 800 ms of pauses fit in 1.6 s: five watches, not thousands.
    expect(watched.length).toBeGreaterThanOrEqual(4);
    expect(watched.length).toBeLessThanOrEqual(6);
  });

  it("takes a watch that fails for a reason to read again, and goes on waiting", async () => {
    const { deps, read } = depsWith([], pod("running", "40"));
    let calls = 0;
    const failing = {
      ...deps,
      watch: async () => {
        calls++;
        throw new Error("watch /api/v1/namespaces/ns/pods: HTTP 500");
      },
    } as typeof deps;
    const outcome = await waitForRunning(failing, pod("starting", "10"), pool, 5000);
    expect(outcome.ok).toBe(true);
    expect(calls).toBe(1);
    expect(read).toEqual(["GET /api/v1/namespaces/ns/pods/p-0"]);
  });

  it("ends as stopping when the host stops, and first hands its start back (waiter-until removed)", async () => {
    const until = "2026-11-23T12:01:00Z";
    const claimed = pod("starting", "10");
    claimed.metadata = { ...claimed.metadata, annotations: { "agentbox.navix.sh/waiter-until": until } };
    const { deps } = depsWith([], claimed);
    const patches: unknown[] = [];
    const stopping = new AbortController();
    const stops = {
      ...deps,
      stopping: stopping.signal,
      kube: new KubeClient(async (req) => {
        if (req.method === "PATCH") patches.push(req.body);
        return { status: 200, body: JSON.stringify(claimed) };
      }),
    } as typeof deps;
    setTimeout(() => stopping.abort(), 50);
    const t0 = Date.now();
    const outcome = await waitForRunning(stops, claimed, pool, 60_000);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(outcome).toMatchObject({ ok: false, reason: "stopping" });
    expect(patches).toEqual([
      [
        { op: "test", path: "/metadata/labels/agentbox.navix.sh~1sandbox-id", value: "sbx-1" },
        { op: "test", path: "/metadata/annotations/agentbox.navix.sh~1waiter-until", value: until },
        { op: "remove", path: "/metadata/annotations/agentbox.navix.sh~1waiter-until" },
      ],
    ]);
  });

  it("keeps waiting through an outage (watch and read failing) and ends at its timeout with what it saw", async () => {
    const { deps } = depsWith([], pod("starting", "10"));
    let reads = 0;
    const down = {
      ...deps,
      kube: new KubeClient(async () => {
        reads++;
        throw new Error("connect ECONNREFUSED");
      }),
      watch: async () => {
        throw new Error("watch: connect ECONNREFUSED");
      },
    } as typeof deps;
    const claimed = pod("starting", "10");
    const outcome = await waitForRunning(down, claimed, pool, 1200);
    expect(outcome).toMatchObject({ ok: false, reason: "timeout", pod: claimed });
    expect(reads).toBeGreaterThanOrEqual(2);
    expect(reads).toBeLessThanOrEqual(6);
  });
});
