import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../hosts/node/hash-key.ts";
import {
  API_KEY_PREFIX,
  bearerOrApiKey,
  decodeKeyEntry,
  decodeStoredKeyEntry,
  encodeKeyEntry,
  generateApiKey,
  hashApiKey,
  type Tenant,
} from "../../lib/claims/api-keys.ts";

const CREATED = new Date("2026-05-10T12:00:00.750Z");

describe("generateApiKey", () => {
  it("is abx_ then 32 random bytes in unpadded base64url", () => {
    const key = generateApiKey();
    expect(key.startsWith(API_KEY_PREFIX)).toBe(true);
    expect(key).toMatch(/^abx_[A-Za-z0-9_-]{43}$/);
    const bytes = Buffer.from(key.slice(API_KEY_PREFIX.length), "base64url");
    expect(bytes).toHaveLength(32);
    expect(bytes.toString("base64url")).toBe(key.slice(API_KEY_PREFIX.length));
  });

  it("never repeats", () => {
    const keys = new Set(Array.from({ length: 1000 }, generateApiKey));
    expect(keys.size).toBe(1000);
  });
});

describe("hashApiKey", () => {
  it.each([
    ["abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"],
    ["", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"],
    // UTF-8 bytes (c3 a9), not UTF-16 code units.
    ["é", "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c"],
  ])("sha256(%j) in lowercase hex, the same from the Node host's synchronous hash", async (key, hex) => {
    expect(await hashApiKey(key)).toBe(hex);
    expect(sha256Hex(key)).toBe(hex);
  });

  it("differs per key", async () => {
    expect(await hashApiKey("abx_a")).not.toBe(await hashApiKey("abx_b"));
  });
});

describe("encodeKeyEntry / decodeKeyEntry", () => {
  it("stores team, user and the creation time; admin only when true", () => {
    expect(JSON.parse(encodeKeyEntry({ team: "ml", user: "ada" }, CREATED))).toEqual({
      team: "ml",
      user: "ada",
      createdAt: "2026-05-10T12:00:00Z",
    });
    expect(JSON.parse(encodeKeyEntry({ team: "ml", user: "ada", admin: false }, CREATED))).not.toHaveProperty(
      "admin",
    );
    expect(JSON.parse(encodeKeyEntry({ team: "ops", user: "root", admin: true }, CREATED))).toMatchObject({
      admin: true,
    });
  });

  it.each<Tenant>([
    { team: "ml", user: "ada" },
    { team: "ops", user: "root", admin: true },
    { team: "A.b_c-9", user: "x" },
  ])("round-trips %j", (tenant) => {
    expect(decodeKeyEntry(encodeKeyEntry(tenant, CREATED))).toEqual(tenant);
  });

  it("ignores fields it does not know and admin: false", () => {
    expect(decodeKeyEntry('{"team":"ml","user":"ada","admin":false,"note":"ci"}')).toEqual({
      team: "ml",
      user: "ada",
    });
  });

  it.each([
    ["not JSON", "{team"],
    ["JSON null", "null"],
    ["an array", '["ml","ada"]'],
    ["missing user", '{"team":"ml"}'],
    ["missing team", '{"user":"ada"}'],
    ["empty team", '{"team":"","user":"ada"}'],
    ["empty user", '{"team":"ml","user":""}'],
    ["team with a space", '{"team":"m l","user":"ada"}'],
    ["user with a slash", '{"team":"ml","user":"a/b"}'],
    ["team ending in -", '{"team":"ml-","user":"ada"}'],
    ["team over 63 characters", JSON.stringify({ team: "a".repeat(64), user: "ada" })],
    ["numeric user", '{"team":"ml","user":7}'],
    ["admin as a string", '{"team":"ml","user":"ada","admin":"true"}'],
  ])("%s → undefined", (_, json) => {
    expect(decodeKeyEntry(json)).toBeUndefined();
  });

  it("reads a stored entry from base64, and takes one that is not base64 or not an entry for nobody", () => {
    const tenant: Tenant = { team: "ml", user: "ada" };
    expect(decodeStoredKeyEntry(btoa(encodeKeyEntry(tenant, CREATED)))).toEqual(tenant);
    expect(decodeStoredKeyEntry("%%% not base64 %%%")).toBeUndefined();
    expect(decodeStoredKeyEntry(btoa("{team"))).toBeUndefined();
    expect(decodeStoredKeyEntry(btoa("\u0000\u00ff\u0010"))).toBeUndefined();
  });

  it("accepts 63-character names", () => {
    const team = "a".repeat(63);
    expect(decodeKeyEntry(JSON.stringify({ team, user: "u" }))).toEqual({ team, user: "u" });
  });
});

describe("bearerOrApiKey", () => {
  it.each<[string, { authorization?: string; "x-api-key"?: string }, string | undefined]>([
    ["X-API-Key", { "x-api-key": "abx_1" }, "abx_1"],
    ["X-API-Key, trimmed", { "x-api-key": "  abx_1 " }, "abx_1"],
    ["Bearer", { authorization: "Bearer abx_2" }, "abx_2"],
    ["bearer in any case, extra spaces", { authorization: "  bEaReR   abx_2  " }, "abx_2"],
    ["X-API-Key wins over Authorization", { "x-api-key": "abx_1", authorization: "Bearer abx_2" }, "abx_1"],
    ["an empty X-API-Key falls back to Bearer", { "x-api-key": " ", authorization: "Bearer abx_2" }, "abx_2"],
    ["no headers", {}, undefined],
    ["Basic is not a key", { authorization: "Basic YTpi" }, undefined],
    ["Bearer without a key", { authorization: "Bearer " }, undefined],
    ["a bare token is not Bearer", { authorization: "abx_2" }, undefined],
    ["a key with a space inside is refused", { authorization: "Bearer abx 2" }, undefined],
  ])("%s", (_, headers, expected) => {
    expect(bearerOrApiKey(headers)).toBe(expected);
  });
});
