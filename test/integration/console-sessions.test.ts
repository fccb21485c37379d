import { randomBytes } from "node:crypto";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_MISS_GAP_MS, KEY_READ_SHARE_MS } from "../../functions/api/authenticate.ts";
import { revokeApiKey } from "../../functions/api/manage-api-keys.ts";
import { CONSOLE_SESSIONS_SECRET, SESSION_READ_GAP_MS } from "../../functions/console/console-sessions.ts";
import { CONSOLE_BODY_LIMIT, consoleRoutes } from "../../http/console.ts";
import { hashApiKey } from "../../lib/claims/api-keys.ts";
import { decodeSession, SESSION_TTL_MS, sessionHash } from "../../lib/console/sessions.ts";
import { PacedRead } from "../../lib/util/paced-read.ts";
import { SharedRead } from "../../lib/util/shared-read.ts";
import { httpsRequest } from "./support/http.ts";
import { inProcessApi, tenantKey } from "./support/in-process-api.ts";
import { kube, until } from "./support/kube.ts";
import { testDeps } from "./support/steps.ts";

// The console's server-side sessions (issue #35, point 6), in this process against the real
// apiserver: the console routes as the host mounts them, with the host's paced reads, over a
// transport that records every request (`sent`), and the steps' clock (`base.clock`) for expiry.

const { core, cluster } = kube();
const base = testDeps();
// Keys and sessions of their own namespace: the expiry test's clock prunes every session it sees.
const { deps, sent } = inProcessApi(base, {
  apiKeys: { namespace: `console-sessions-${randomBytes(3).toString("hex")}`, name: "agentbox-api-keys" },
  keyReads: new PacedRead(KEY_MISS_GAP_MS, () => Date.now()),
  keyCacheReads: new SharedRead(KEY_READ_SHARE_MS, () => Date.now()),
});
const ADMIN_TOKEN = randomBytes(16).toString("hex");
const sessionReads = new PacedRead<Awaited<ReturnType<typeof readSessions>>>(SESSION_READ_GAP_MS, () =>
  Date.now(),
);
const consoleApp = (adminToken: string) =>
  new Hono().route("/ui", consoleRoutes({ api: deps, adminToken, sessionReads }));
const app = consoleApp(ADMIN_TOKEN);
const ORIGIN = "https://console.test";
const SESSIONS_PATH = `/api/v1/namespaces/${deps.apiKeys.namespace}/secrets/${CONSOLE_SESSIONS_SECRET}`;

/** login posts the sign-in form (`extra` fields appended) to `to`. */
const login = (credential: string, to: Hono = app, extra = "") =>
  to.request(`${ORIGIN}/ui/login`, {
    method: "POST",
    headers: { origin: ORIGIN, "content-type": "application/x-www-form-urlencoded" },
    body: `${new URLSearchParams({ credential })}${extra}`,
  });
const cookieOf = (res: Response) => /agentbox_console=([^;]*)/.exec(res.headers.get("set-cookie") ?? "")?.[1];
/** signedIn opens a console page with `cookie`: true when it is shown, false when sent to sign in. */
const signedIn = async (cookie: string, on: Hono = app) => {
  const res = await on.request(`${ORIGIN}/ui/templates`, {
    headers: { cookie: `agentbox_console=${cookie}` },
  });
  if (res.status === 303 && res.headers.get("location") === "/ui/login") return false;
  expect(res.status).toBe(200);
  return true;
};
/** signIn signs in with credential and returns the cookie's value. */
const signIn = async (credential: string, to: Hono = app) => {
  const res = await login(credential, to);
  expect(res.status).toBe(303);
  const cookie = cookieOf(res);
  if (!cookie) throw new Error("no session cookie");
  return cookie;
};
async function readSessions() {
  return core
    .readNamespacedSecret({ name: CONSOLE_SESSIONS_SECRET, namespace: deps.apiKeys.namespace })
    .catch(() => undefined);
}

beforeAll(async () => {
  await core.createNamespace({ body: { metadata: { name: deps.apiKeys.namespace } } }).catch(() => {});
});
afterAll(async () => {
  await core.deleteNamespace({ name: deps.apiKeys.namespace }).catch(() => {});
  base.history.close();
});

describe("console sessions", () => {
  it("sign-in sets a random session ID, not the key nor anything the key gives back; sign-out ends it", async () => {
    const key = await tenantKey(deps, `sess-${randomBytes(2).toString("hex")}`);
    const cookie = await signIn(key);
    expect(cookie).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookie).not.toContain(key);
    expect(cookie).not.toContain(key.slice(4));
    const again = await signIn(key);
    expect(again).not.toBe(cookie); // random per sign-in, not derived from the key
    expect(await signedIn(cookie)).toBe(true);

    // The server keeps the ID's hash and the key's hash: nothing in the Secret signs anyone in.
    const stored = (await readSessions())?.data ?? {};
    expect(Object.keys(stored)).toContain(sessionHash(cookie));
    expect(Object.keys(stored)).not.toContain(cookie);
    expect(decodeSession(stored[sessionHash(cookie)] ?? "")?.subject).toEqual({ key: await hashApiKey(key) });
    const text = Object.values(stored)
      .map((v) => Buffer.from(v, "base64").toString())
      .join("\n");
    expect(text).not.toContain(key);
    expect(text).not.toContain(cookie);

    const out = await app.request(`${ORIGIN}/ui/logout`, {
      method: "POST",
      headers: { origin: ORIGIN, cookie: `agentbox_console=${cookie}` },
    });
    expect(out.status).toBe(303);
    expect(await signedIn(cookie)).toBe(false); // replayed after sign-out: the sign-in page
    expect(Object.keys((await readSessions())?.data ?? {})).not.toContain(sessionHash(cookie));
    expect(await signedIn(again)).toBe(true); // the other session of the same key is its own
  });

  it("a cookie holding a raw key (the old format) signs nobody in, and costs no read", async () => {
    const key = await tenantKey(deps, `sess-${randomBytes(2).toString("hex")}`);
    sent.length = 0;
    expect(await signedIn(key)).toBe(false);
    expect(await signedIn(ADMIN_TOKEN)).toBe(false);
    expect(sent.filter((r) => r.method === "GET")).toEqual([]);
  });

  it("revoking the key ends its sessions within the key check's bound", async () => {
    const key = await tenantKey(deps, `sess-${randomBytes(2).toString("hex")}`);
    const cookie = await signIn(key);
    expect(cookie).not.toBe(key);
    expect(await signedIn(cookie)).toBe(true);
    expect(await revokeApiKey(deps, key)).toMatchObject({ ok: true });
    const started = Date.now();
    await until("the revoked key's session refused", 5_000, async () => !(await signedIn(cookie)));
    expect(Date.now() - started).toBeLessThan(3_000); // ADR 0020: about two seconds
    // It is removed then: it never comes back.
    expect(Object.keys((await readSessions())?.data ?? {})).not.toContain(sessionHash(cookie));
  });

  it("an ended session (12 h after sign-in, by the host's clock) signs nobody in and is pruned", async () => {
    const key = await tenantKey(deps, `sess-${randomBytes(2).toString("hex")}`);
    const cookie = await signIn(key);
    expect(cookie).not.toBe(key);
    try {
      // A minute before the end by the host's clock (the real seconds since sign-in, on a loaded
      // machine, add to the offset: a one-second margin ran out under a full test run).
      base.clock.offsetMs = SESSION_TTL_MS - 60_000;
      expect(await signedIn(cookie)).toBe(true);
      base.clock.offsetMs = SESSION_TTL_MS;
      expect(await signedIn(cookie)).toBe(false);
    } finally {
      base.clock.offsetMs = 0;
    }
    expect(await signedIn(cookie)).toBe(false); // gone, not merely out of time
    expect(Object.keys((await readSessions())?.data ?? {})).not.toContain(sessionHash(cookie));
  });

  it("an admin session holds while the admin token is the same one", async () => {
    const cookie = await signIn(ADMIN_TOKEN);
    expect(cookie).not.toBe(ADMIN_TOKEN);
    expect(cookie).not.toContain(ADMIN_TOKEN);
    const text = Object.values((await readSessions())?.data ?? {})
      .map((v) => Buffer.from(v, "base64").toString())
      .join("\n");
    expect(text).not.toContain(ADMIN_TOKEN);
    expect(await signedIn(cookie)).toBe(true);
    // The same sessions Secret, a host whose admin token has changed: the session is over.
    const rotated = consoleApp(randomBytes(16).toString("hex"));
    expect(await signedIn(cookie, rotated)).toBe(false);
    expect(await signedIn(cookie)).toBe(false);
  });

  it("a burst of unknown session IDs costs a paced few reads of the sessions Secret", async () => {
    await signIn(ADMIN_TOKEN); // the Secret exists
    sent.length = 0;
    const started = Date.now();
    for (let wave = 0; wave < 4; wave++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => signedIn(randomBytes(32).toString("base64url"))),
      );
      expect(answers.every((a) => a === false)).toBe(true);
    }
    const elapsed = Date.now() - started;
    const reads = sent.filter((r) => r.method === "GET" && r.path === SESSIONS_PATH).length;
    expect(reads).toBeGreaterThan(0);
    // 200 IDs: one read under way plus one per gap, not one per ID.
    expect(reads).toBeLessThanOrEqual(2 + Math.ceil(elapsed / SESSION_READ_GAP_MS));
    expect(reads).toBeLessThan(20);
  });

  it("refuses an oversized sign-in body before parsing it: a valid credential in it signs nobody in", async () => {
    const key = await tenantKey(deps, `sess-${randomBytes(2).toString("hex")}`);
    const pad = `&pad=${"x".repeat(CONSOLE_BODY_LIMIT)}`;
    const big = await login(key, app, pad);
    expect(big.status).toBe(413);
    expect(await big.text()).toContain("limited to 64 KiB");
    expect(cookieOf(big)).toBeUndefined();
    // Without a length up front (chunked), the same: the limit counts what is read.
    const body = new TextEncoder().encode(`${new URLSearchParams({ credential: key })}${pad}`);
    const chunked = await app.request(`${ORIGIN}/ui/login`, {
      method: "POST",
      headers: { origin: ORIGIN, "content-type": "application/x-www-form-urlencoded" },
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < body.length; i += 8192) controller.enqueue(body.slice(i, i + 8192));
          controller.close();
        },
      }),
      duplex: "half",
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(cookieOf(chunked)).toBeUndefined();
    // Every console form: a signed-in release with an oversized body.
    const cookie = await signIn(key);
    const release = await app.request(`${ORIGIN}/ui/sandboxes/nope/release`, {
      method: "POST",
      headers: {
        origin: ORIGIN,
        cookie: `agentbox_console=${cookie}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: pad.slice(1),
    });
    expect(release.status).toBe(413);
  });
});

describe("console sessions on the test host", () => {
  it("the host signs in to a server-side session: the cookie is a session ID, not the key; sign-out ends it", async () => {
    const host = `https://127.0.0.1:${cluster.hostPort}`;
    // The host's own keys Secret (agentbox-system), not this file's.
    const key = await tenantKey(
      { ...deps, apiKeys: { namespace: "agentbox-system", name: "agentbox-api-keys" } },
      "sess-host",
    );
    const form = (path: string, body: string, cookie?: string) =>
      httpsRequest(`${host}/ui/${path}`, cluster.caCert, {
        timeoutMs: 10_000,
        method: "POST",
        headers: {
          origin: host,
          "content-type": "application/x-www-form-urlencoded",
          ...(cookie ? { cookie: `agentbox_console=${cookie}` } : {}),
        },
        body,
      });
    const page = (cookie: string) =>
      httpsRequest(`${host}/ui/templates`, cluster.caCert, {
        timeoutMs: 10_000,
        headers: { cookie: `agentbox_console=${cookie}` },
      });
    const signin = await form("login", `credential=${encodeURIComponent(key)}`);
    expect(signin.status).toBe(303);
    const set = String(signin.headers["set-cookie"]);
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/Secure/);
    expect(set).toMatch(/SameSite=Strict/);
    const cookie = /agentbox_console=([^;]*)/.exec(set)?.[1] ?? "";
    expect(cookie).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(decodeURIComponent(cookie)).not.toContain(key.slice(4));
    expect((await page(cookie)).status).toBe(200);
    // The old cookie held the raw key: it signs nobody in now.
    expect((await page(key)).headers.location).toBe("/ui/login");
    expect((await form("logout", "", cookie)).status).toBe(303);
    const replayed = await page(cookie);
    expect(replayed.status).toBe(303);
    expect(replayed.headers.location).toBe("/ui/login");
    // An oversized sign-in (a valid key in it) is refused before it is parsed.
    const big = await form(
      "login",
      `credential=${encodeURIComponent(key)}&pad=${"x".repeat(CONSOLE_BODY_LIMIT)}`,
    );
    expect(big.status).toBe(413);
    expect(big.headers["set-cookie"]).toBeUndefined();
  });
});
