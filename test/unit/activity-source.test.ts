import { describe, expect, it } from "vitest";
import { httpActivitySource, mergePulls, sharePulls } from "../../functions/activity-source.ts";
import { parseActivityReport } from "../../lib/claims/activity.ts";

// The pulled activity source: what counts as a valid answer, what the request carries, and how
// every kind of failure rejects (a broken source must never read as "no activity"). The fetch is
// injected; the integration test pulls a real HTTP server.

const TOKEN = "s3cret-token-value";

function fakeFetch(answer: (init: RequestInit) => Response | Promise<Response>) {
  const calls: { url: string; init: RequestInit }[] = [];
  const fn = (async (url: string | URL | Request, init?: RequestInit) => {
    calls.push({ url: String(url), init: init ?? {} });
    return answer(init ?? {});
  }) as typeof fetch;
  return { fn, calls };
}

const pull = (answer: (init: RequestInit) => Response | Promise<Response>, timeoutMs = 1000) => {
  const f = fakeFetch(answer);
  return { f, run: httpActivitySource({ url: "http://proxy/stats?k=v", token: TOKEN, timeoutMs }, f.fn) };
};

describe("parseActivityReport", () => {
  it("keeps each sandbox's latest time in whole seconds, allows an empty list and extra keys", () => {
    const r = parseActivityReport({
      sandboxes: [
        { id: "sbx-a", lastActive: "2026-11-21T11:00:00.900Z", requests: 3 },
        { id: "sbx-a", lastActive: "2026-11-21T10:00:00Z" },
        { id: "sbx-b", lastActive: "2026-11-21T12:00:00+01:00" },
      ],
      proxy: "p-1",
    });
    expect(r).toEqual({
      ok: true,
      value: new Map([
        ["sbx-a", new Date("2026-11-21T11:00:00Z")],
        ["sbx-b", new Date("2026-11-21T11:00:00Z")],
      ]),
    });
    expect(parseActivityReport({ sandboxes: [] })).toEqual({ ok: true, value: new Map() });
  });

  it("refuses the whole body when any part is invalid", () => {
    expect(parseActivityReport([])).toMatchObject({ ok: false });
    expect(parseActivityReport({})).toMatchObject({ ok: false });
    expect(
      parseActivityReport({
        sandboxes: [
          { id: "sbx-a", lastActive: "2026-11-21T11:00:00Z" },
          { id: "sbx-b", lastActive: "yesterday" },
        ],
      }),
    ).toEqual({
      ok: false,
      error: "invalid activity report: sandboxes[1].lastActive: must be an RFC 3339 time",
    });
    expect(
      parseActivityReport({ sandboxes: [{ id: "a,b", lastActive: "2026-11-21T11:00:00Z" }] }),
    ).toMatchObject({
      ok: false,
    });
  });
});

describe("httpActivitySource", () => {
  it("GETs the URL with the bearer token, a timeout signal, no redirects, and parses the answer", async () => {
    const { f, run } = pull(() =>
      Response.json({ sandboxes: [{ id: "sbx-a", lastActive: "2026-11-21T11:00:00Z" }] }),
    );
    expect(await run()).toEqual(new Map([["sbx-a", new Date("2026-11-21T11:00:00Z")]]));
    expect(f.calls).toHaveLength(1);
    const { url, init } = f.calls[0]!;
    expect(url).toBe("http://proxy/stats?k=v");
    expect(init).toMatchObject({
      method: "GET",
      redirect: "manual",
      headers: { accept: "application/json", authorization: `Bearer ${TOKEN}` },
    });
    expect(init.signal).toBeInstanceOf(AbortSignal);
    const anonymous = fakeFetch(() => Response.json({ sandboxes: [] }));
    await httpActivitySource({ url: "http://proxy/stats", timeoutMs: 1000 }, anonymous.fn)();
    expect(anonymous.calls[0]?.init.headers).toEqual({ accept: "application/json" });
  });

  it.each([
    ["a 500", () => new Response("boom", { status: 500 }), /HTTP 500/],
    ["a redirect", () => new Response(null, { status: 302, headers: { location: "http://x/" } }), /HTTP 302/],
    ["a body that is not JSON", () => new Response("<html>"), /not JSON/],
    ["an invalid report", () => Response.json({ sandboxes: [{ id: "sbx-a" }] }), /invalid activity report/],
    [
      "a refused connection",
      () => Promise.reject(new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } })),
      /unreachable: ECONNREFUSED/,
    ],
  ])("rejects %s, naming neither the token nor the URL", async (_name, answer, message) => {
    const { run } = pull(answer);
    const err = await run().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.message).toMatch(message);
    expect(err?.message).not.toContain(TOKEN);
    expect(err?.message).not.toContain("proxy");
  });

  it("rejects when the source does not answer within the timeout", async () => {
    const { run } = pull(
      (init) =>
        new Promise<Response>((_resolve, reject) =>
          init.signal?.addEventListener("abort", () => reject(init.signal?.reason)),
        ),
      50,
    );
    await expect(run()).rejects.toThrow("activity source did not answer within 50 ms");
  });
});

describe("sharePulls", () => {
  it("shares one pull in flight, reuses a success for reuseMs, never reuses a failure", async () => {
    let clock = 0;
    let calls = 0;
    let fail = false;
    const shared = sharePulls(
      async () => {
        calls++;
        await Promise.resolve();
        if (fail) throw new Error("down");
        return new Map([["sbx-a", new Date(calls)]]);
      },
      1000,
      () => clock,
    );
    const [a, b] = await Promise.all([shared(), shared()]);
    expect(calls).toBe(1);
    expect(a).toBe(b);
    clock = 999;
    expect(await shared()).toBe(a);
    expect(calls).toBe(1);
    clock = 1000;
    fail = true;
    await expect(shared()).rejects.toThrow("down");
    await expect(shared()).rejects.toThrow("down");
    expect(calls).toBe(3);
    fail = false;
    expect((await shared()).get("sbx-a")).toEqual(new Date(4));
  });
});

describe("mergePulls", () => {
  const t = (s: string) => new Date(`2026-01-01T00:00:${s}Z`);
  it("answers each sandbox's latest time among the sources", async () => {
    const merged = mergePulls([
      async () =>
        new Map([
          ["a", t("10")],
          ["b", t("05")],
        ]),
      async () =>
        new Map([
          ["a", t("03")],
          ["c", t("07")],
        ]),
    ]);
    expect(await merged()).toEqual(
      new Map([
        ["a", t("10")],
        ["b", t("05")],
        ["c", t("07")],
      ]),
    );
  });

  it("rejects when any source fails: a partial answer could make a sandbox look idle", async () => {
    const merged = mergePulls([
      async () => new Map([["a", t("10")]]),
      () => Promise.reject(new Error("router down")),
    ]);
    await expect(merged()).rejects.toThrow("router down");
  });
});
