import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { fileSignature } from "../../lib/data-plane/file-signature.ts";
import { bodyFraming, targetProblem, upgradeProblem } from "../../lib/data-plane/request-framing.ts";

describe("bodyFraming", () => {
  it("keeps a Content-Length, sends a body of unknown length chunked, and pipes nothing without one", () => {
    expect(bodyFraming({ headers: { "content-length": "12" } })).toEqual({ kind: "length", length: 12 });
    expect(bodyFraming({ headers: { "content-length": "0" } })).toEqual({ kind: "length", length: 0 });
    // A chunked GET (the smuggling carrier) is re-chunked upstream, never piped raw.
    expect(bodyFraming({ headers: { "transfer-encoding": "chunked" } })).toEqual({ kind: "chunked" });
    expect(bodyFraming({ headers: { "transfer-encoding": "gzip, Chunked" } })).toEqual({ kind: "chunked" });
    expect(bodyFraming({ headers: {} })).toEqual({ kind: "none" });
    // HTTP/2: DATA after the headers without a length is chunked; a stream ended with its headers has none.
    expect(bodyFraming({ headers: {}, endedWithHeaders: false })).toEqual({ kind: "chunked" });
    expect(bodyFraming({ headers: {}, endedWithHeaders: true })).toEqual({ kind: "none" });
    expect(bodyFraming({ headers: { "content-length": "3" }, endedWithHeaders: false })).toEqual({
      kind: "length",
      length: 3,
    });
  });

  it("refuses framing a proxy could read two ways", () => {
    for (const headers of [
      { "content-length": "3", "transfer-encoding": "chunked" },
      { "transfer-encoding": "chunked, identity" },
      { "transfer-encoding": "identity" },
      { "content-length": "-1" },
      { "content-length": "3, 3" },
      { "content-length": ["3", "4"] },
      { "content-length": " 3" },
      { "content-length": "0x10" },
    ])
      expect(bodyFraming({ headers })).toMatchObject({ kind: "bad" });
  });
});

describe("targetProblem and upgradeProblem", () => {
  it("forwards origin-form targets only", () => {
    for (const ok of ["/", "/health", "/files?path=/x", "//init"]) expect(targetProblem(ok)).toBeUndefined();
    for (const bad of ["*", "http://49983-sbx.example.com/init", "sbx.example.com:443", "", "init"])
      expect(targetProblem(bad)).toMatch(/origin-form/);
  });

  it("refuses an upgrade that carries a body", () => {
    expect(upgradeProblem({ upgrade: "websocket" })).toBeUndefined();
    expect(upgradeProblem({ "content-length": "0" })).toBeUndefined();
    expect(upgradeProblem({ "content-length": "5" })).toMatch(/may not carry a body/);
    expect(upgradeProblem({ "transfer-encoding": "chunked" })).toMatch(/may not carry a body/);
  });
});

describe("fileSignature", () => {
  it("is envd's and the SDK's: v1_ and unpadded base64 of sha256 over path:operation:username:token[:expiration]", async () => {
    const token = "a-token";
    const viaNode = (text: string) =>
      `v1_${createHash("sha256").update(text).digest("base64").replace(/=+$/, "")}`;
    // The SDK's own computation (getSignature): WebCrypto, btoa, padding stripped.
    const viaSdk = async (text: string) => {
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
      return `v1_${btoa(String.fromCharCode(...digest)).replace(/=+$/, "")}`;
    };
    expect(fileSignature("/etc/hosts", "read", "root", token)).toBe(viaNode("/etc/hosts:read:root:a-token"));
    expect(fileSignature("/tmp/é x", "write", "", token, 1_800_000_000)).toBe(
      await viaSdk("/tmp/é x:write::a-token:1800000000"),
    );
  });
});
