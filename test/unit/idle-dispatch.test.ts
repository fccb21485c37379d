import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it, vi } from "vitest";
import { IdleDispatch, UNSUITABLE } from "../../functions/cache/idle-dispatch.ts";
import { SCALE_DOWN_PROTECTED_ANNOTATION } from "../../lib/crd/keys.ts";
import type { SandboxPool } from "../../lib/crd/sandbox-pool.ts";
import { KubeError } from "../../lib/kube/errors.ts";
import type { WatchEvent } from "../../lib/kube/transport.ts";
import { poolOwnerReference } from "../../lib/membership/pod-ownership.ts";
import { autoscalingGroup } from "../support/autoscaling-group.ts";
import { asMember, envOf } from "../support/env-member.ts";

// The dispatch logic over a scripted event stream: which waiter claims which pod, how often, and
// what becomes of a lost claim or a wait that times out. (Against the apiserver: the waiting
// creates of test/integration/sandbox-api.test.ts and env-routing.test.ts.)

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const pool = {
  metadata: { name: "p", namespace: "ns", uid: "pool-uid" },
  spec: { replicas: 3 },
} as SandboxPool;
/** OWNER is the controller reference of the pool's own pods (render-pod.ts writes it). */
const OWNER = poolOwnerReference(pool);

function idlePod(name: string, ready = true, owners = [OWNER]): V1Pod {
  return {
    metadata: {
      name,
      namespace: "ns",
      resourceVersion: "1",
      labels: { "agentbox.navix.sh/sandbox-pool": "p", "agentbox.navix.sh/sandbox-phase": "idle" },
      ownerReferences: owners,
    },
    status: { phase: "Running", conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  };
}

/** scripted is a watch transport whose events the test pushes; it counts the watches opened. */
function scripted() {
  const listeners: ((e: WatchEvent) => boolean)[] = [];
  let opened = 0;
  const watch = (_req: unknown, onEvent: (e: WatchEvent) => boolean, signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      opened++;
      listeners.push(onEvent);
      signal.addEventListener("abort", () => resolve());
    });
  const push = (type: WatchEvent["type"], object: V1Pod) => {
    for (const l of listeners) l({ type, object } as WatchEvent);
  };
  return { watch, push, opened: () => opened };
}

const settle = () => new Promise((r) => setTimeout(r, 5));

/** dispatcher is an IdleDispatch over a scripted watch. */
function dispatcher() {
  const s = scripted();
  return {
    ...s,
    dispatch: new IdleDispatch({ watch: s.watch, now: () => new Date(), random: () => 0.5, log: quiet }),
  };
}

/** setup is a dispatch over a scripted watch, and a waiter whose claims the test answers by hand. */
function setup() {
  const s = dispatcher();
  const { dispatch } = s;
  const tried: string[] = [];
  let answer: (v: string | undefined) => void = () => {};
  let reject: (e: Error) => void = () => {};
  const manual = (timeoutMs = 1000) =>
    dispatch.wait([pool], timeoutMs, (pod) => {
      tried.push(`${pod.metadata?.name}@${pod.metadata?.resourceVersion}`);
      return new Promise<string | undefined>((resolve, fail) => {
        answer = resolve;
        reject = fail;
      });
    });
  return {
    ...s,
    dispatch,
    tried,
    manual,
    answer: (v: string | undefined) => answer(v),
    /** rejectNext fails the claim under way (the apiserver answered 5xx, or timed out). */
    rejectNext: (e: Error) => reject(e),
  };
}

describe("IdleDispatch", () => {
  it("shares one watch and gives each new idle pod to one waiter, oldest first", async () => {
    const s = dispatcher();
    const { dispatch } = s;
    const claims: string[] = [];
    const waiter = (who: string) =>
      dispatch.wait([pool], 200, async (pod) => {
        claims.push(`${who}:${pod.metadata?.name}`);
        return `${who} got ${pod.metadata?.name}`;
      });
    const waits = [waiter("w1"), waiter("w2"), waiter("w3")];
    await settle();
    expect(s.opened()).toBe(1);
    s.push("ADDED", idlePod("a", false)); // not ready: nobody claims it yet
    await settle();
    expect(claims).toEqual([]);
    s.push("MODIFIED", idlePod("a"));
    s.push("ADDED", idlePod("b"));
    expect(await Promise.all(waits)).toEqual(["w1 got a", "w2 got b", undefined]);
    expect(claims).toEqual(["w1:a", "w2:b"]);
  });

  it("offers a member pool's marked pod for its Env group's protection window, not the default 10 s (issue #26)", async () => {
    const member = asMember(pool, "default");
    const env = envOf(autoscalingGroup({ down: { protectionWindowSeconds: 60 } }));
    const marked = idlePod("m");
    marked.metadata = {
      ...marked.metadata,
      annotations: { [SCALE_DOWN_PROTECTED_ANNOTATION]: new Date(Date.now() - 30_000).toISOString() },
    };
    const s = dispatcher();
    const tried: string[] = [];
    const claim = async (pod: V1Pod) => {
      tried.push(pod.metadata?.name ?? "");
      return pod.metadata?.name;
    };
    const without = s.dispatch.wait([member], 50, claim);
    s.push("ADDED", marked);
    expect(await without).toBeUndefined();
    const withEnv = s.dispatch.wait([member], 1000, claim, undefined, env);
    s.push("ADDED", marked);
    expect(await withEnv).toBe("m");
    expect(tried).toEqual(["m"]);
  });

  it("never offers a pod the waiter's pool does not own (the pool label alone, another uid)", async () => {
    const s = dispatcher();
    const claims: string[] = [];
    const recreated = { ...pool, metadata: { ...pool.metadata, uid: "new-uid" } } as SandboxPool;
    const waiter = (p: SandboxPool, timeoutMs: number) =>
      s.dispatch.wait([p], timeoutMs, async (pod) => {
        claims.push(`${p.metadata?.uid}:${pod.metadata?.name}`);
        return pod.metadata?.name;
      });
    // The stream follows the first waiter's read of the pool; the second read it made again.
    const first = waiter(pool, 200);
    const second = waiter(recreated, 400);
    await settle();
    s.push("ADDED", idlePod("forged", true, []));
    s.push("ADDED", idlePod("other", true, [{ ...OWNER, uid: "other-uid" }]));
    expect(await first).toBeUndefined();
    // Pod a is the stream's pool's, but not the pool the remaining waiter read.
    s.push("ADDED", idlePod("a"));
    expect(await second).toBeUndefined();
    expect(claims).toEqual([]);
  });

  it("frees a waiter whose claim was lost for the next pod, and lets a claim under way finish after the timeout", async () => {
    const s = setup();
    const { dispatch } = s;
    const tries: string[] = [];
    const lost = dispatch.wait([pool], 1000, async (pod) => {
      tries.push(pod.metadata?.name ?? "");
      return pod.metadata?.name === "taken" ? undefined : "won c";
    });
    s.push("ADDED", idlePod("taken"));
    await settle();
    s.push("ADDED", idlePod("c"));
    expect(await lost).toBe("won c");
    expect(tries).toEqual(["taken", "c"]);
    const slow = s.manual(10);
    s.push("ADDED", idlePod("d"));
    await new Promise((r) => setTimeout(r, 30)); // past the timeout, the claim still runs
    s.answer("won d late");
    expect(await slow).toBe("won d late");
  });

  it("keeps a newer version of a pod reported while an older one was being claimed", async () => {
    const s = setup();
    const wait = s.manual();
    s.push("ADDED", idlePod("a"));
    await settle();
    s.push("MODIFIED", { ...idlePod("a"), metadata: { ...idlePod("a").metadata, resourceVersion: "2" } });
    s.answer(undefined); // the claim of version 1 lost: the pod had changed
    await settle();
    expect(s.tried).toEqual(["a@1", "a@2"]);
    s.answer("won a");
    expect(await wait).toBe("won a");
  });

  it("forgets a pod that left the idle selection before anyone was free to claim it", async () => {
    const s = setup();
    const busy = s.manual();
    s.push("ADDED", idlePod("a"));
    s.push("ADDED", idlePod("b"));
    s.push("DELETED", idlePod("b")); // claimed elsewhere meanwhile
    await settle();
    s.answer(undefined);
    await settle();
    s.push("ADDED", idlePod("c"));
    await settle();
    expect(s.tried).toEqual(["a@1", "c@1"]);
    s.answer("won c");
    expect(await busy).toBe("won c");
  });

  it("keeps a pod whose claim failed (not lost) on offer, and tries it again after a pause", async () => {
    const s = setup();
    const wait = s.manual();
    s.push("ADDED", idlePod("a"));
    await settle();
    expect(s.tried).toEqual(["a@1"]);
    // The apiserver answered 503 (or the request timed out): nothing is known about the pod.
    s.rejectNext(new Error("HTTP 503"));
    await settle();
    expect(s.tried).toEqual(["a@1"]); // not at once: a failing apiserver is not hammered
    await vi.waitFor(() => expect(s.tried).toEqual(["a@1", "a@1"]), { timeout: 5000 });
    s.answer("won a");
    expect(await wait).toBe("won a");
  });

  it("offers a pod one waiter cannot use to the next, and never again to the first", async () => {
    const s = dispatcher();
    const { dispatch } = s;
    const claims: string[] = [];
    const picky = dispatch.wait([pool], 100, async (pod) => {
      claims.push(`picky:${pod.metadata?.name}`);
      return UNSUITABLE;
    });
    const easy = dispatch.wait([pool], 1000, async (pod) => {
      claims.push(`easy:${pod.metadata?.name}`);
      return `easy got ${pod.metadata?.name}`;
    });
    s.push("ADDED", idlePod("a"));
    expect(await easy).toBe("easy got a");
    expect(await picky).toBeUndefined();
    expect(claims).toEqual(["picky:a", "easy:a"]);
  });

  it("offers a pod to the next waiter when the apiserver refused one waiter's claim (403)", async () => {
    const s = dispatcher();
    const { dispatch } = s;
    const claims: string[] = [];
    const refused = dispatch.wait([pool], 1000, async () => {
      claims.push("refused");
      throw new KubeError(403, "Forbidden", 'admission webhook "claims" denied the request');
    });
    const other = dispatch.wait([pool], 1000, async (pod) => {
      claims.push("other");
      return `other got ${pod.metadata?.name}`;
    });
    s.push("ADDED", idlePod("a"));
    expect(await other).toBe("other got a");
    expect(await refused).toBeUndefined();
    expect(claims).toEqual(["refused", "other"]);
  });

  it("leaves no timer behind when the last waiter goes while a failed pod waits for its retry", async () => {
    vi.useFakeTimers();
    try {
      const s = setup();
      const wait = s.manual(100);
      s.push("ADDED", idlePod("a"));
      await vi.advanceTimersByTimeAsync(1);
      s.rejectNext(new Error("HTTP 503"));
      await vi.advanceTimersByTimeAsync(1); // the retry is armed for 250 ms from now
      expect(vi.getTimerCount()).toBeGreaterThan(0);
      await vi.advanceTimersByTimeAsync(100); // the waiter's time is up: the stream closes
      expect(await wait).toBeUndefined();
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});
