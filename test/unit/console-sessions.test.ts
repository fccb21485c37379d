import { describe, expect, it } from "vitest";
import { hashApiKey } from "../../lib/claims/api-keys.ts";
import {
  adminBinding,
  decodeSession,
  encodeSession,
  isSessionId,
  MAX_CONSOLE_SESSIONS,
  MAX_SESSIONS_PER_SUBJECT,
  newSessionId,
  sessionHash,
  sessionWrite,
} from "../../lib/console/sessions.ts";

const KEY_HASH = "a".repeat(64);
const T0 = Date.parse("2026-12-01T12:00:00Z");

describe("console session IDs", () => {
  it("are 256 random bits in base64url, and only that shape is looked up", () => {
    const ids = new Set(Array.from({ length: 100 }, newSessionId));
    expect(ids.size).toBe(100);
    for (const id of ids) expect(isSessionId(id)).toBe(true);
    // An old cookie held the raw key (abx_ and 43 characters); the admin token, garbage: no lookup.
    expect(isSessionId(`abx_${"A".repeat(43)}`)).toBe(false);
    expect(isSessionId("A".repeat(42))).toBe(false);
    expect(isSessionId(`${"A".repeat(42)}=`)).toBe(false);
    expect(isSessionId(undefined)).toBe(false);
  });

  it("are stored under their SHA-256, as the key check hashes (the same digest everywhere)", async () => {
    const id = newSessionId();
    expect(sessionHash(id)).toBe(await hashApiKey(id));
    expect(sessionHash(id)).not.toContain(id);
  });

  it("bind the admin token by a hash of its own purpose, never the token's plain digest", async () => {
    expect(adminBinding("t0ken")).toMatch(/^[0-9a-f]{64}$/);
    expect(adminBinding("t0ken")).not.toBe(await hashApiKey("t0ken"));
    expect(adminBinding("t0ken")).not.toBe(adminBinding("t0ken2"));
  });
});

describe("stored sessions", () => {
  it("round-trip a key's or the admin's session, and garbled entries sign nobody in", () => {
    const key = { subject: { key: KEY_HASH }, expiresAt: T0 };
    expect(decodeSession(encodeSession(key))).toEqual(key);
    const admin = { subject: { admin: KEY_HASH }, expiresAt: T0 };
    expect(decodeSession(encodeSession(admin))).toEqual(admin);
    expect(decodeSession("not base64!")).toBeUndefined();
    expect(decodeSession(btoa("{"))).toBeUndefined();
    expect(decodeSession(btoa(JSON.stringify({ expires: "2026-12-01T12:00:00Z" })))).toBeUndefined();
    const both = { key: KEY_HASH, admin: KEY_HASH, expires: "2026-12-01T12:00:00Z" };
    expect(decodeSession(btoa(JSON.stringify(both)))).toBeUndefined();
    // A raw key where its hash belongs is not a session either.
    const raw = { key: "abx_raw", expires: "2026-12-01T12:00:00Z" };
    expect(decodeSession(btoa(JSON.stringify(raw)))).toBeUndefined();
  });
});

describe("sessionWrite", () => {
  const live = encodeSession({ subject: { key: KEY_HASH }, expiresAt: T0 + 1000 });
  const over = encodeSession({ subject: { key: KEY_HASH }, expiresAt: T0 });
  const secret = { metadata: { resourceVersion: "7" }, data: { h1: live, h2: over, h3: "garbled" } };

  it("adds under the version read and prunes ended and garbled entries in the same write", () => {
    expect(sessionWrite(secret, { add: { hash: "h4", value: live } }, T0)).toEqual([
      { op: "test", path: "/metadata/resourceVersion", value: "7" },
      { op: "remove", path: "/data/h2" },
      { op: "remove", path: "/data/h3" },
      { op: "add", path: "/data/h4", value: live },
    ]);
  });

  it("removes one session (sign-out), adds the data map when there is none, or does nothing", () => {
    expect(sessionWrite(secret, { remove: ["h1"] }, T0 - 1)).toEqual([
      { op: "test", path: "/metadata/resourceVersion", value: "7" },
      { op: "remove", path: "/data/h1" },
      { op: "remove", path: "/data/h3" },
    ]);
    expect(
      sessionWrite({ metadata: { resourceVersion: "1" } }, { add: { hash: "h", value: live } }, T0),
    ).toEqual([
      { op: "test", path: "/metadata/resourceVersion", value: "1" },
      { op: "add", path: "/data", value: {} },
      { op: "add", path: "/data/h", value: live },
    ]);
    expect(sessionWrite({ data: { h1: live } }, { remove: ["gone"] }, T0)).toBe("none");
  });

  it("ends a subject's oldest session past MAX_SESSIONS_PER_SUBJECT instead of filling the Secret", () => {
    const at = (i: number) => encodeSession({ subject: { key: KEY_HASH }, expiresAt: T0 + 1000 * (i + 1) });
    const other = encodeSession({ subject: { key: "b".repeat(64) }, expiresAt: T0 + 5000 });
    const data = {
      ...Object.fromEntries(Array.from({ length: MAX_SESSIONS_PER_SUBJECT }, (_, i) => [`h${i}`, at(i)])),
      o: other,
    };
    expect(sessionWrite({ data }, { add: { hash: "x", value: at(99) } }, T0)).toEqual([
      { op: "test", path: "/metadata/resourceVersion", value: "" },
      { op: "remove", path: "/data/h0" },
      { op: "add", path: "/data/x", value: at(99) },
    ]);
  });

  it("refuses a session beyond MAX_CONSOLE_SESSIONS live ones, counting after the prune", () => {
    const data = Object.fromEntries(
      Array.from({ length: MAX_CONSOLE_SESSIONS }, (_, i) => [
        `h${i}`,
        encodeSession({ subject: { key: i.toString(16).padStart(64, "0") }, expiresAt: T0 + 1000 }),
      ]),
    );
    expect(sessionWrite({ data }, { add: { hash: "x", value: live } }, T0)).toBe("full");
    // Once they have ended, the same write prunes them all and adds.
    const ops = sessionWrite({ data }, { add: { hash: "x", value: live } }, T0 + 1000);
    expect(Array.isArray(ops) && ops.length).toBe(MAX_CONSOLE_SESSIONS + 2);
  });
});
