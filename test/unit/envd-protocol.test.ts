import { getSignature } from "e2b";
import { describe, expect, it } from "vitest";
import { checkFileAuth, fileSignature, tokenMatches } from "../../infra/dev/envd/auth.ts";
import {
  contentTypeFits,
  decodeEnvelopes,
  endStreamEnvelope,
  envelope,
  httpStatusOf,
  messageEnvelope,
  parseTimeoutMs,
  RpcError,
  streamRequestMessage,
} from "../../infra/dev/envd/connect.ts";
import {
  bytes,
  endEvent,
  permissionsString,
  processConfig,
  selector,
  signalOf,
} from "../../infra/dev/envd/messages.ts";
import { hostPath, sandboxPath, sandboxPathOf } from "../../infra/dev/envd/paths.ts";

// The envd stand-in's pure parts: Connect framing, the message decoders, path confinement and
// the /files signature (checked against the official SDK's own signer).

const code = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof RpcError ? e.code : `not an RpcError: ${String(e)}`;
  }
  return "no error";
};

describe("Connect framing", () => {
  it("frames a message as flags, big-endian length, JSON", () => {
    const f = messageEnvelope({ event: { start: { pid: 7 } } });
    const json = '{"event":{"start":{"pid":7}}}';
    expect(f[0]).toBe(0);
    expect(f.readUInt32BE(1)).toBe(json.length);
    expect(f.subarray(5).toString()).toBe(json);
  });

  it("ends a stream with flag 0x02 and the error, or an empty object", () => {
    const ok = endStreamEnvelope();
    expect(ok[0]).toBe(2);
    expect(ok.subarray(5).toString()).toBe("{}");
    const failed = endStreamEnvelope(new RpcError("not_found", "process 9 not found"));
    expect(JSON.parse(failed.subarray(5).toString())).toEqual({
      error: { code: "not_found", message: "process 9 not found" },
    });
  });

  it("decodes the frames of a body, and refuses truncated ones", () => {
    const body = Buffer.concat([envelope(0, Buffer.from("{}")), envelope(2, Buffer.from('{"a":1}'))]);
    expect(decodeEnvelopes(body).map((e) => [e.flags, e.payload.toString()])).toEqual([
      [0, "{}"],
      [2, '{"a":1}'],
    ]);
    expect(code(() => decodeEnvelopes(body.subarray(0, body.length - 1)))).toBe("invalid_argument");
    expect(code(() => decodeEnvelopes(Buffer.from([0, 0, 0])))).toBe("invalid_argument");
  });

  it("takes exactly one uncompressed JSON object as a stream's request", () => {
    expect(streamRequestMessage(messageEnvelope({ path: "/x" }))).toEqual({ path: "/x" });
    expect(code(() => streamRequestMessage(Buffer.alloc(0)))).toBe("invalid_argument");
    expect(code(() => streamRequestMessage(envelope(1, Buffer.from("{}"))))).toBe("unimplemented");
    expect(code(() => streamRequestMessage(envelope(0, Buffer.from("[1]"))))).toBe("invalid_argument");
    expect(code(() => streamRequestMessage(envelope(0, Buffer.from("{nope"))))).toBe("invalid_argument");
  });

  it("maps codes to HTTP statuses, content types to RPC kinds, and reads the timeout", () => {
    expect([
      httpStatusOf("unauthenticated"),
      httpStatusOf("not_found"),
      httpStatusOf("resource_exhausted"),
    ]).toEqual([401, 404, 429]);
    expect(contentTypeFits("unary", "application/json; charset=utf-8")).toBe(true);
    expect(contentTypeFits("unary", "application/proto")).toBe(false);
    expect(contentTypeFits("server_streaming", "application/connect+json")).toBe(true);
    expect(contentTypeFits("server_streaming", "application/json")).toBe(false);
    expect(parseTimeoutMs("60000")).toBe(60_000);
    expect(parseTimeoutMs(undefined)).toBeUndefined();
    expect(code(() => parseTimeoutMs("-1"))).toBe("invalid_argument");
  });
});

describe("messages", () => {
  it("reads a StartRequest's process and rejects bad fields by name", () => {
    expect(
      processConfig({ process: { cmd: "/bin/bash", args: ["-l", "-c", "echo hi"], envs: { A: "1" } } }),
    ).toEqual({
      cmd: "/bin/bash",
      args: ["-l", "-c", "echo hi"],
      envs: { A: "1" },
    });
    expect(() => processConfig({})).toThrow(/process: is required/);
    expect(() => processConfig({ process: { cmd: "x", args: [1] } })).toThrow(/process.args/);
    expect(() => processConfig({ process: { cmd: "x", envs: { A: 1 } } })).toThrow(/process.envs.A/);
  });

  it("reads selectors, signals by name or number, and base64 bytes", () => {
    expect(selector({ process: { pid: 12 } })).toEqual({ pid: 12 });
    expect(selector({ process: { tag: "web" } })).toEqual({ tag: "web" });
    expect(code(() => selector({ process: {} }))).toBe("invalid_argument");
    expect([signalOf({ signal: "SIGNAL_SIGKILL" }), signalOf({ signal: 15 })]).toEqual([
      "SIGKILL",
      "SIGTERM",
    ]);
    expect(code(() => signalOf({ signal: "SIGNAL_SIGHUP" }))).toBe("invalid_argument");
    expect(bytes({ stdin: Buffer.from("hi\n").toString("base64") }, "stdin").toString()).toBe("hi\n");
    expect(code(() => bytes({ stdin: "not base64!" }, "stdin"))).toBe("invalid_argument");
  });

  it("describes an end as Go's ProcessState does", () => {
    expect(endEvent(0, null)).toEqual({ end: { exitCode: 0, exited: true, status: "exit status 0" } });
    expect(endEvent(3, null)).toEqual({
      end: { exitCode: 3, exited: true, status: "exit status 3", error: "exit status 3" },
    });
    expect(endEvent(null, "SIGKILL")).toEqual({
      end: { exitCode: -1, exited: false, status: "signal: killed", error: "signal: killed" },
    });
  });

  it("renders permissions like envd", () => {
    expect(permissionsString(0o644, "FILE_TYPE_FILE")).toBe("-rw-r--r--");
    expect(permissionsString(0o755, "FILE_TYPE_DIRECTORY")).toBe("drwxr-xr-x");
  });
});

describe("sandbox paths", () => {
  it("resolves relative and ~ paths against /home/user, and normalizes", () => {
    expect(sandboxPath("a.txt")).toBe("/home/user/a.txt");
    expect(sandboxPath("~/d/../b")).toBe("/home/user/b");
    expect(sandboxPath("/tmp/x/")).toBe("/tmp/x");
    expect(sandboxPath("")).toBe("/home/user");
    expect(sandboxPath("/")).toBe("/");
    expect(sandboxPath("../../x")).toBe("/x");
  });

  it("refuses a path that climbs above the sandbox's root, a NUL byte or another user's ~", () => {
    expect(code(() => sandboxPath("../../../etc/passwd"))).toBe("permission_denied");
    expect(code(() => sandboxPath("/../x"))).toBe("permission_denied");
    expect(code(() => sandboxPath("a\0b"))).toBe("invalid_argument");
    expect(code(() => sandboxPath("~root/x"))).toBe("invalid_argument");
  });

  it("maps sandbox paths under the root and back", () => {
    expect(hostPath("/r/1", "/home/user/a")).toBe("/r/1/home/user/a");
    expect(hostPath("/r/1", "/")).toBe("/r/1");
    expect(sandboxPathOf("/r/1", "/r/1/home/user/a")).toBe("/home/user/a");
    expect(code(() => sandboxPathOf("/r/1", "/r/10/x"))).toBe("permission_denied");
  });
});

describe("access", () => {
  it("compares tokens in full, and never matches an unset one", () => {
    expect(tokenMatches("abc", "abc")).toBe(true);
    expect(tokenMatches("abc", "abd")).toBe(false);
    expect(tokenMatches("abc", "abcd")).toBe(false);
    expect(tokenMatches("", "")).toBe(false);
    expect(tokenMatches("abc", undefined)).toBe(false);
  });

  it("computes the signature the official SDK computes, with and without expiration", async () => {
    const sdk = await getSignature({
      path: "/home/user/a",
      operation: "read",
      user: undefined,
      envdAccessToken: "t0k",
    });
    expect(fileSignature("/home/user/a", "read", "", "t0k")).toBe(sdk.signature);
    const timed = await getSignature({
      path: "b",
      operation: "write",
      user: "root",
      expirationInSeconds: 60,
      envdAccessToken: "t0k",
    });
    expect(fileSignature("b", "write", "root", "t0k", timed.expiration ?? 0)).toBe(timed.signature);
  });

  it("allows /files to the token holder or a valid, unexpired signature only", () => {
    const now = 1_800_000_000;
    const sig = fileSignature("a", "read", "", "tok", now + 5);
    const base = { path: "a", operation: "read" as const };
    expect(checkFileAuth("tok", { ...base, token: "tok" }, now)).toBeUndefined();
    expect(checkFileAuth("tok", { ...base, token: "nope" }, now)).toMatch(/does not match/);
    expect(checkFileAuth("tok", base, now)).toMatch(/missing signature/);
    expect(
      checkFileAuth("tok", { ...base, signature: sig, signatureExpiration: String(now + 5) }, now),
    ).toBeUndefined();
    expect(
      checkFileAuth("tok", { ...base, signature: sig, signatureExpiration: String(now + 5) }, now + 6),
    ).toMatch(/expired/);
    expect(
      checkFileAuth(
        "tok",
        { ...base, operation: "write", signature: sig, signatureExpiration: String(now + 5) },
        now,
      ),
    ).toMatch(/invalid signature/);
    expect(checkFileAuth("tok", { ...base, signature: sig, signatureExpiration: "soon" }, now)).toMatch(
      /signature_expiration/,
    );
  });
});
