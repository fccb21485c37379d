import { readFileSync } from "node:fs";
import { request } from "node:https";
import { KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticate } from "../../functions/api/authenticate.ts";
import { createApiKey } from "../../functions/api/create-api-key.ts";
import type { HostDeps } from "../../functions/host-deps.ts";
import { nodeKubeTransport } from "../../hosts/node/kube-transport.ts";
import type { NativeEnv } from "../../http/native.ts";
import { sandboxLogsRoutes } from "../../http/sandbox-logs.ts";
import { CHATTY_LOG_DIR } from "../../infra/images/rootfs.ts";
import { KubeClient } from "../../lib/kube/client.ts";
import { FollowSlots } from "../../lib/logs/follow-slots.ts";
import { httpsRequest } from "./support/http.ts";
import { inProcessApi } from "./support/in-process-api.ts";
import { kube, nowhere, until } from "./support/kube.ts";
import { REAL_IMAGES, realNode, realPoolSpec } from "./support/real-node.ts";
import { runSdkScript } from "./support/sdk-script.ts";
import { isReady, phaseOf } from "./support/steps.ts";
import { API_KEYS, tenantPool } from "./support/tenant-pool.ts";

// A sandbox's logs on the real node (kubelet, containerd, runc): the chatty image prints a line a
// second (every third a JSON warn line) and appends a dated JSON line to a runtime log file its
// template names as a runtime's logDir. The pool has no idle image, so its pod runs chatty from
// its creation and a claim takes the one-write fast path: the container printed before the
// claim, and after a release the reset's new container prints until the next claim. The lines a
// tenant sees are its own: since its claim, never the previous tenant's, through E2B's v1 and
// v2, the native API (paged and followed), and the SDK's typed client.

const { cluster, core } = kube();
const t = tenantPool("rn-logs", "research", 1, {
  ...realPoolSpec(1, { image: REAL_IMAGES.chatty, idleImage: false }),
  runtimes: [{ name: "chatter", logDir: CHATTY_LOG_DIR }],
});
const api = `https://127.0.0.1:${cluster.hostPort}`;
const keys = { b: "", admin: "" };
const first = { id: "", pod: "", claimedAt: "", sentAt: 0, boot: "" };

type Entry = { timestamp: string; level: string; message: string; fields: Record<string, string> };

/** call sends a request to the test host with `key`. */
async function call(method: string, path: string, key: string, body?: unknown) {
  const res = await httpsRequest(`${api}${path}`, cluster.caCert, {
    timeoutMs: 120_000,
    method,
    headers: { "content-type": "application/json", "x-api-key": key },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: res.body, json: () => JSON.parse(res.body) as Record<string, unknown> };
}

/**
 * v2Page reads E2B's v2 logs page of `id` with the query, as `key` (the owner's by default): the
 * status, the body and its entries (none unless 200). It asserts nothing, so `until` callbacks
 * use it and the test asserts on what they returned.
 */
async function v2Page(id: string, query: string, key = t.key) {
  const res = await call("GET", `/e2b/v2/sandboxes/${id}/logs?${query}`, key);
  const logs = res.status === 200 ? (res.json() as { logs: Entry[] }).logs : [];
  return { status: res.status, body: res.body, logs };
}

/** v2 reads E2B's v2 logs page of `id` with the query, as `key`, and asserts it answered 200. */
async function v2(id: string, query: string, key = t.key): Promise<Entry[]> {
  const page = await v2Page(id, query, key);
  expect(page.status, page.body).toBe(200);
  return page.logs;
}

/** containerLines are a page's entries from the container's log. */
const containerLines = (logs: Entry[]) => logs.filter((e) => e.fields.source === "container");

/** idlePod waits until the pool's pod is idle and Ready on the real node. */
const idlePod = () =>
  until("the pool's pod idle on the real node", 240_000, async () => {
    const [pod] = await t.pods();
    return pod && phaseOf(pod) === "idle" && isReady(pod) && pod.spec?.nodeName === realNode().name && pod;
  });

/**
 * claim creates a sandbox through E2B as `key` and reads its claim time (whole seconds) and when
 * the create was sent (ms; the host and the node share this machine's clock): no line stamped
 * before `sentAt` is the sandbox's.
 */
async function claim(key: string): Promise<{ id: string; pod: string; claimedAt: string; sentAt: number }> {
  const sentAt = Date.now();
  const res = await call("POST", "/e2b/sandboxes", key, { templateID: `${t.ns}/p` });
  expect(res.status, res.body).toBe(201);
  const id = String(res.json().sandboxID);
  const pods = await t.pods();
  const pod = pods.find((p: V1Pod) => p.metadata?.labels?.["agentbox.navix.sh/sandbox-id"] === id);
  const claimedAt = pod?.metadata?.annotations?.["agentbox.navix.sh/claimed-at"] ?? "";
  expect(claimedAt).toMatch(/Z$/);
  return { id, pod: pod?.metadata?.name ?? "", claimedAt, sentAt };
}

/**
 * printedWhileIdle waits until the idle pod's container printed 3 lines (read from the kubelet
 * directly): if a claim keeps the container running, lines from before the claim's second exist.
 */
const printedWhileIdle = (pod: V1Pod) =>
  until("3 lines of the idle container", 30_000, async () => {
    const name = pod.metadata?.name ?? "";
    const text = await core.readNamespacedPodLog({ name, namespace: t.ns, container: "sandbox" });
    return /tick [3-9]/.test(String(text));
  });

/** containerIdOf is the sandbox container's ID as the kubelet reports it. */
const containerIdOf = (pod: V1Pod | undefined) =>
  pod?.status?.containerStatuses?.find((c) => c.name === "sandbox")?.containerID ?? "none";

/** bootOf reads the container start a chatty line names. */
const bootOf = (e: Entry) => /boot=(\S+)/.exec(e.message)?.[1] ?? e.fields.boot;
const tickOf = (e: Entry) => Number(/^tick (\d+) /.exec(e.message)?.[1] ?? Number.NaN);

beforeAll(async () => {
  keys.b = await t.keyOf("u-second");
  keys.admin = await createApiKey(
    { kube: t.deps.kube, apiKeys: API_KEYS, now: () => new Date() },
    { team: "ops", user: "root", admin: true },
  );
  await idlePod();
}, 300_000);
afterAll(async () => {
  if (first.id) await call("DELETE", `/e2b/sandboxes/${first.id}`, t.key).catch(() => {});
});

describe("a sandbox's logs on the real node", () => {
  it("shows its container's lines since its claim and its LogDir file, through E2B v1, v2 and native", async () => {
    const idle = await idlePod();
    await printedWhileIdle(idle);
    Object.assign(first, await claim(t.key));
    const running = (await t.pods()).find((p) => p.metadata?.name === first.pod);
    expect(containerIdOf(running)).toBe(containerIdOf(idle));
    const claimMs = Date.parse(first.claimedAt);
    // The claim kept the container that ran before it (fast path): wait for 4 lines of this sandbox.
    // The callback asserts nothing (a failed expect would be retried to the deadline): it stops at
    // an answer other than 200 too, and the test asserts on what it returned.
    const found = await until("4 container lines since the claim", 60_000, async () => {
      const page = await v2Page(first.id, "direction=forward&search=tick");
      return (page.status !== 200 || containerLines(page.logs).length >= 4) && page;
    });
    expect(found.status, found.body).toBe(200);
    const lines = containerLines(found.logs);
    first.boot = bootOf(lines[0] as Entry) ?? "";
    expect(first.boot).toMatch(/^[0-9a-f-]{8,}$/);
    // Not one line from before the create was sent, although the container printed before it.
    expect(lines.every((e) => bootOf(e) === first.boot && Date.parse(e.timestamp) >= first.sentAt)).toBe(
      true,
    );
    // The lines it printed before the claim are cut, even those of the claim's own second.
    expect(tickOf(lines[0] as Entry)).toBeGreaterThan(1);
    const ticks = lines.map(tickOf);
    expect(ticks).toEqual(ticks.map((_, i) => (ticks[0] ?? 0) + i));

    // v1: every line, oldest first, raw and structured alike.
    const v1 = await call("GET", `/e2b/sandboxes/${first.id}/logs?start=${claimMs}`, t.key);
    expect(v1.status, v1.body).toBe(200);
    const { logs, logEntries } = v1.json() as { logs: { line: string }[]; logEntries: Entry[] };
    expect(logs.length).toBe(logEntries.length);
    expect(logEntries.map((e) => e.timestamp)).toEqual([...logEntries.map((e) => e.timestamp)].sort());
    expect(logs.some((l) => l.line.startsWith('{"level":"warn","msg":"tock'))).toBe(true);

    // Levels: the JSON warn lines are warn, the rest info.
    const warn = await v2(first.id, "level=warn&limit=1000");
    expect(warn.length).toBeGreaterThan(0);
    expect(
      warn.every((e) => e.level === "warn" && /^tock \d+$/.test(e.message) && e.fields.boot === first.boot),
    ).toBe(true);
    expect(lines.every((e) => e.level === "info")).toBe(true);

    // The runtime's LogDir file, read through envd: its dated lines since the claim.
    const runtime = (await v2(first.id, "search=runtime&limit=1000")).filter(
      (e) => e.fields.source === "runtime",
    );
    expect(runtime.length).toBeGreaterThan(0);
    expect(runtime[0]?.fields).toMatchObject({ file: `${CHATTY_LOG_DIR}/runtime.log`, boot: first.boot });
    expect(runtime.every((e) => Date.parse(e.timestamp) >= first.sentAt)).toBe(true);

    // Paging with the cursor (inclusive, in ms) both ways, and the limit.
    const newest = await v2(first.id, "limit=2&search=tick");
    expect(newest).toHaveLength(2);
    expect(Date.parse(newest[0]?.timestamp ?? "")).toBeGreaterThanOrEqual(
      Date.parse(newest[1]?.timestamp ?? ""),
    );
    const older = await v2(
      first.id,
      `limit=2&search=tick&cursor=${Date.parse(newest[1]?.timestamp ?? "") - 1}`,
    );
    expect(older).toHaveLength(2);
    expect(tickOf(older[0] as Entry)).toBe(tickOf(newest[1] as Entry) - 1);
    const oldest = await v2(first.id, `direction=forward&limit=2&search=tick&cursor=${claimMs}`);
    expect(oldest.map(tickOf)).toEqual(ticks.slice(0, 2));
    const next = await v2(
      first.id,
      `direction=forward&limit=2&search=tick&cursor=${Date.parse(oldest[1]?.timestamp ?? "") + 1}`,
    );
    expect(next.map(tickOf)).toEqual(ticks.slice(2, 4));

    // The native API: the same page.
    const native = await call(
      "GET",
      `/v1/sandboxes/${first.id}/logs?direction=forward&limit=2&search=tick`,
      t.key,
    );
    expect(native.status, native.body).toBe(200);
    expect((native.json() as { logs: Entry[] }).logs).toEqual(oldest);
  }, 180_000);

  it("answers 404 to another tenant and to an admin key, and 400 naming a bad parameter", async () => {
    for (const key of [keys.b, keys.admin]) {
      expect((await call("GET", `/e2b/sandboxes/${first.id}/logs`, key)).status).toBe(404);
      expect((await call("GET", `/e2b/v2/sandboxes/${first.id}/logs`, key)).status).toBe(404);
      expect((await call("GET", `/v1/sandboxes/${first.id}/logs`, key)).status).toBe(404);
      expect((await call("GET", `/v1/sandboxes/${first.id}/logs?follow=true`, key)).status).toBe(404);
    }
    const e2b = await call("GET", `/e2b/v2/sandboxes/${first.id}/logs?limit=1001`, t.key);
    expect(e2b.status).toBe(400);
    expect(e2b.json()).toMatchObject({ code: 400, message: expect.stringMatching(/^limit: /) });
    const bad = await call("GET", `/v1/sandboxes/${first.id}/logs?direction=sideways`, t.key);
    expect(bad.status).toBe(400);
    expect(bad.json()).toMatchObject({ error: { code: "BadRequest", fields: [{ path: "direction" }] } });
  }, 60_000);

  it("answers the SDK's typed client, and shows a line the tenant wrote into its container's log", async () => {
    const out = JSON.parse(
      (
        await runSdkScript(
          "e2b-sdk-logs.ts",
          {
            E2B_API_KEY: t.key,
            E2B_TEST_SANDBOX: first.id,
            E2B_SANDBOX_URL: `http://127.0.0.1:${cluster.dataPlanePort}`,
            E2B_TEST_SAY: `secret of the first tenant ${first.boot}`,
          },
          120_000,
        )
      )
        .trim()
        .split("\n")
        .at(-1) ?? "{}",
    ) as Record<string, { status: number; data: { logs: Entry[]; logEntries?: Entry[] } } | string | number>;
    expect(out.error).toBeUndefined();
    expect(out.said).toBe(0);
    const v2Answer = out.v2 as { status: number; data: { logs: Entry[] } };
    expect(v2Answer.status).toBe(200);
    expect(v2Answer.data.logs.length).toBeGreaterThan(0);
    expect(v2Answer.data.logs.every((e) => e.level === "warn")).toBe(true);
    expect((out.v1 as { status: number }).status).toBe(200);
    const said = await until("the tenant's own line in its logs", 20_000, async () => {
      const page = await v2Page(first.id, "search=secret");
      const own = page.logs.some((e) => e.message === `secret of the first tenant ${first.boot}`);
      return (page.status !== 200 || own) && page;
    });
    expect(said.status, said.body).toBe(200);
  }, 180_000);

  it("stops reading the container's log when the following client goes away, and caps follows", async () => {
    // The /v1 logs routes in this process, over a transport that records what they send the
    // apiserver, with the real key check and follow slots the test can see: a slot is freed
    // when the follow's loop has returned, after which nothing can read for it any more. So the
    // test waits for that condition instead of watching a fixed window for reads that don't come.
    const { deps, sent } = inProcessApi(t.deps);
    const tenant = (await authenticate(deps, t.key)) ?? expect.fail("the owner's key is not accepted");
    // One follow a tenant on this app: a second while the first is open is refused.
    const slots = new FollowSlots(1);
    const app = logsApp(deps, slots);
    const owner = `${tenant.team}/${tenant.user}`;
    const reads = () => sent.filter((r) => r.path.endsWith("/log")).length;
    const gone = new AbortController();
    const res = await app.request(`/v1/sandboxes/${first.id}/logs?follow=true&search=tick&limit=1`, {
      headers: { "x-api-key": t.key },
      signal: gone.signal,
    });
    expect(res.status).toBe(200);
    expect(slots.count(owner)).toBe(1);
    const reader = res.body?.getReader() ?? expect.fail("no body");
    const decoder = new TextDecoder();
    let text = "";
    // The page's line, then lines the polls found: the follow is reading.
    await until("two followed lines", 15_000, async () => {
      const { value } = await reader.read();
      text += decoder.decode(value, { stream: true });
      return text.split("\n").filter(Boolean).length >= 2;
    });
    expect(reads()).toBeGreaterThanOrEqual(2);
    const second = await app.request(`/v1/sandboxes/${first.id}/logs?follow=true`, {
      headers: { "x-api-key": t.key },
    });
    expect(second.status).toBe(429);
    expect(await second.json()).toEqual({
      error: {
        code: "TooManyFollows",
        message: "a tenant may follow at most 1 sandbox logs at once on this host; close one first",
      },
    });
    gone.abort();
    await reader.cancel();
    const atAbort = reads();
    // The abort wakes the follow's wait: its loop ends within a poll (1 s), not at the idle timeout.
    await until("the follow's end", 3_000, async () => slots.count(owner) === 0);
    // At most the read in flight at the abort was sent; the loop has returned, so no more can be.
    expect(reads()).toBeLessThanOrEqual(atAbort + 1);
  }, 60_000);

  it("ends a follow with an error when the container's log keeps failing to read", async () => {
    // The follow's pods/log reads go to an apiserver that is not there once `down` is set (a real
    // refused connection): five failed polls in a row end the stream with the reason, not "idle".
    const down = { now: false };
    const real = nodeKubeTransport(kube().kc);
    const nowhereKc = new KubeConfig();
    nowhereKc.loadFromString(nowhere());
    const gone = nodeKubeTransport(nowhereKc);
    const { deps } = inProcessApi(t.deps, {
      kube: new KubeClient((req) => (down.now && req.path.endsWith("/log") ? gone(req) : real(req))),
    });
    const res = await logsApp(deps, new FollowSlots()).request(
      `/v1/sandboxes/${first.id}/logs?follow=true&search=tick&limit=1&idleTimeout=3600`,
      { headers: { "x-api-key": t.key } },
    );
    expect(res.status).toBe(200);
    const reader = res.body?.getReader() ?? expect.fail("no body");
    const decoder = new TextDecoder();
    let text = "";
    const lines = () => text.split("\n").filter(Boolean);
    await until("the page's line", 15_000, async () => {
      const { value } = await reader.read();
      text += decoder.decode(value, { stream: true });
      return lines().length >= 1;
    });
    down.now = true;
    const startedFailing = Date.now();
    await until("the follow's end", 20_000, async () => {
      const { value, done } = await reader.read();
      text += decoder.decode(value, { stream: true });
      return done;
    });
    expect(lines().at(-1)).toBe(
      JSON.stringify({
        end: "error",
        message:
          "the sandbox's container log could not be read 5 times in a row (the apiserver could not be reached)",
      }),
    );
    // Five polls a second apart, far sooner than the idle timeout.
    expect(Date.now() - startedFailing).toBeLessThan(10_000);
  }, 60_000);

  it("follows: streams a new line within seconds, and ends when the sandbox is released", async () => {
    const stream = follow(first.id, "search=tick&limit=1");
    const [initial] = await stream.next(1, 15_000);
    const fresh = await stream.next(1, 15_000);
    expect(tickOf(fresh[0] as Entry)).toBeGreaterThan(tickOf(initial as Entry));
    const idle = follow(first.id, "search=never-printed&idleTimeout=2");
    expect(await idle.end(20_000)).toEqual({ end: "idle" });
    expect((await call("DELETE", `/v1/sandboxes/${first.id}`, t.key)).status).toBe(204);
    expect(await stream.end(30_000)).toEqual({ end: "released" });
  }, 120_000);

  it("never shows the previous tenant's lines to the next tenant of the same pod", async () => {
    const idle = await idlePod();
    // The reset's new container prints while idle.
    await printedWhileIdle(idle);
    const second = await claim(keys.b);
    expect(second.pod).toBe(first.pod);
    const page = await until("lines of the second tenant", 60_000, async () => {
      const all = await v2Page(second.id, "direction=forward&limit=1000", keys.b);
      return (all.status !== 200 || containerLines(all.logs).length >= 3) && all;
    });
    expect(page.status, page.body).toBe(200);
    const seen = page.logs;
    expect(seen.every((e) => Date.parse(e.timestamp) >= second.sentAt)).toBe(true);
    expect(seen.some((e) => e.message.includes(first.boot) || e.fields.boot === first.boot)).toBe(false);
    expect(seen.some((e) => e.message.includes("secret"))).toBe(false);
    // The reset's new container printed between the tenants. If the claim took the fast path it
    // still runs, and its lines from before the claim are cut; if the claim restarted it, the
    // new container's first line is the claim's.
    const ticks = seen
      .filter((e) => e.fields.source === "container")
      .map(tickOf)
      .filter(Number.isFinite);
    const running = (await t.pods()).find((p) => p.metadata?.name === second.pod);
    const fastPath = containerIdOf(running) === containerIdOf(idle);
    expect(Math.min(...ticks) > 1).toBe(fastPath);
    console.log(
      `[real-node-logs] second claim ${fastPath ? "kept the reset's container" : "restarted it"}; first tick shown ${Math.min(...ticks)}`,
    );
    expect((await call("GET", `/e2b/v2/sandboxes/${second.id}/logs`, t.key)).status).toBe(404);
    expect((await call("DELETE", `/e2b/sandboxes/${second.id}`, keys.b)).status).toBe(204);
  }, 300_000);
});

/**
 * logsApp serves the /v1 logs routes in this process with `deps` and `slots`, behind the real key
 * check (authenticate), as the host's /v1 app does.
 */
function logsApp(deps: HostDeps, slots: FollowSlots) {
  return new Hono<NativeEnv>()
    .use(async (c, next) => {
      const caller = await authenticate(deps, c.req.header("x-api-key"));
      if (!caller) return c.body(null, 401);
      c.set("tenant", caller);
      return next();
    })
    .route("/v1", sandboxLogsRoutes(deps, slots));
}

/**
 * follow opens `GET /v1/sandboxes/{id}/logs?follow=true&<query>` as the owner and reads its
 * NDJSON lines: `next(n)` waits for n more entries, `end()` for the closing `{"end": …}` line and
 * the end of the stream, each within a deadline.
 */
function follow(id: string, query: string) {
  const lines: Record<string, unknown>[] = [];
  let ended = false;
  let failed: Error | undefined;
  let taken = 0;
  const req = request(
    `${api}/v1/sandboxes/${id}/logs?follow=true&${query}`,
    { headers: { "x-api-key": t.key }, ca: readFileSync(cluster.caCert) },
    (res) => {
      if (res.statusCode !== 200) failed = new Error(`follow answered ${res.statusCode}`);
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        const parts = buffer.split("\n");
        buffer = parts.pop() ?? "";
        for (const p of parts) lines.push(JSON.parse(p) as Record<string, unknown>);
      });
      res.on("end", () => {
        ended = true;
      });
    },
  );
  req.on("error", (e) => {
    failed = e;
  });
  req.end();
  // The `until` callbacks below return a failure instead of throwing it (a throw would be retried
  // to the deadline); the caller rethrows it at once.
  return {
    next: async (n: number, ms: number): Promise<Entry[]> => {
      const got = await until(`${n} more followed lines`, ms, async () => {
        const entries = lines.filter((l) => !("end" in l));
        return failed ?? (entries.length >= taken + n && entries.slice(taken, taken + n));
      });
      if (got instanceof Error) throw got;
      taken += n;
      return got as unknown as Entry[];
    },
    end: async (ms: number) => {
      const got = await until("the follow's end", ms, async () => failed ?? ended).finally(() =>
        req.destroy(),
      );
      if (got instanceof Error) throw got;
      return lines.at(-1);
    },
  };
}
