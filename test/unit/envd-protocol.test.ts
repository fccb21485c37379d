import { mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getSignature } from "e2b";
import { afterEach, describe, expect, it } from "vitest";
import { checkFileAuth, checkInitToken, fileSignature, tokenMatches } from "../../infra/dev/envd/auth.ts";
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
import { instanceOfPod } from "../../infra/dev/envd/pod-instances.ts";
import { Pods } from "../../infra/dev/envd/pods.ts";

// The envd stand-in's pure parts: Connect framing, the message decoders, path confinement, the
// /files signature (checked against the official SDK's own signer), and envd's access rules
// before and after /init (e2b-dev/infra packages/envd/internal/api auth.go, init.go).

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

describe("envd's rules before and after /init", () => {
  it("checks no /files request while envd holds no token: any path, any user, any signature", () => {
    const forged = { path: "/etc/shadow", operation: "read" as const, username: "root", signature: "x" };
    expect(checkFileAuth("", forged, 1_800_000_000)).toBeUndefined();
    expect(checkFileAuth("", { path: "a", operation: "write" }, 1_800_000_000)).toBeUndefined();
    expect(checkFileAuth("tok", forged, 1_800_000_000)).toMatch(/invalid signature/);
  });

  it("takes a first /init with any token, then only one repeating it", () => {
    expect(checkInitToken("", "first")).toBeUndefined();
    expect(checkInitToken("", "")).toBeUndefined();
    expect(checkInitToken("first", "first")).toBeUndefined();
    expect(checkInitToken("first", "second")).toBe("access token validation failed");
    expect(checkInitToken("first", "")).toBe("access token reset not authorized");
  });
});

describe("a pod's envd (Pods)", () => {
  const pods = async (instance?: { now: string | undefined }) => {
    const root = await mkdtemp(join(tmpdir(), "envd-unit-"));
    const p = new Pods(root, { processes: 4, watchers: 4 }, instance && (async () => instance.now));
    return p;
  };
  const all: Pods[] = [];
  afterEach(async () => {
    await Promise.all(all.splice(0).map((p) => p.close()));
  });
  const track = (p: Pods) => {
    all.push(p);
    return p;
  };

  it("serves a fresh, tokenless sandbox before any /init, and keeps its files when the token comes", async () => {
    const p = track(await pods());
    const before = await p.of("127.32.0.9");
    expect(before.token).toBe("");
    expect(await readdir(join(before.root.dir, "home"))).toEqual(["user"]);
    await writeFile(join(before.root.dir, "home/user/note"), "x");
    expect(await p.init("127.32.0.9", { accessToken: "t1", envVars: { A: "1" } })).toEqual({
      ok: true,
      applied: true,
    });
    const after = await p.of("127.32.0.9");
    expect(after).toBe(before);
    expect([after.token, after.envVars]).toEqual(["t1", { A: "1" }]);
  });

  it("refuses another token or none once set, changing nothing; the same token replaces the env", async () => {
    const p = track(await pods());
    await p.init("ip", { accessToken: "t1", envVars: { A: "1" } });
    expect(await p.init("ip", { accessToken: "attacker", envVars: { EVIL: "1" } })).toEqual({
      ok: false,
      status: 401,
      reason: "access token validation failed",
    });
    expect(await p.init("ip", { accessToken: "" })).toMatchObject({ ok: false, status: 401 });
    expect([(await p.of("ip")).token, (await p.of("ip")).envVars]).toEqual(["t1", { A: "1" }]);
    await p.init("ip", { accessToken: "t1", envVars: { B: "2" } });
    expect((await p.of("ip")).envVars).toEqual({ B: "2" });
    // No envVars: the env stays (envd replaces it only when given).
    await p.init("ip", { accessToken: "t1" });
    expect((await p.of("ip")).envVars).toEqual({ B: "2" });
  });

  it("skips an /init not newer than the last applied one, and fails a test-broken one only after the check", async () => {
    const p = track(await pods());
    await p.init("ip", { accessToken: "t1", envVars: { A: "1" }, timestampMs: 2000 });
    expect(await p.init("ip", { accessToken: "t1", envVars: { A: "old" }, timestampMs: 1000 })).toEqual({
      ok: true,
      applied: false,
    });
    expect((await p.of("ip")).envVars).toEqual({ A: "1" });
    expect(await p.init("ip", { accessToken: "x", envVars: { AGENTBOX_TEST_FAIL_INIT: "1" } })).toMatchObject(
      {
        status: 401,
      },
    );
    expect(await p.init("ip", { accessToken: "t1", envVars: { AGENTBOX_TEST_FAIL_INIT: "1" } })).toEqual({
      ok: false,
      status: 500,
      reason: "init failed",
    });
  });

  it("meets a fresh envd when the pod's container instance changed, and only then", async () => {
    const instance = { now: "uid/c1" as string | undefined };
    const p = track(await pods(instance));
    await p.init("ip", { accessToken: "t1" });
    const first = await p.of("ip");
    await writeFile(join(first.root.dir, "home/user/secret"), "of the first sandbox");
    // Same container: a new token is refused.
    expect(await p.init("ip", { accessToken: "t2" })).toMatchObject({ ok: false, status: 401 });
    // Unknown (lookup failed): nothing is reset either.
    instance.now = undefined;
    expect(await p.init("ip", { accessToken: "t2" })).toMatchObject({ ok: false, status: 401 });
    // The container restarted (a reset, the next claim): its envd is new and empty.
    instance.now = "uid/c2";
    expect(await p.init("ip", { accessToken: "t2" })).toEqual({ ok: true, applied: true });
    const second = await p.of("ip");
    expect(second.root.dir).not.toBe(first.root.dir);
    expect(second.token).toBe("t2");
    expect(await readdir(join(second.root.dir, "home/user"))).toEqual([]);
    expect(await readdir(first.root.dir).catch(() => "removed")).toBe("removed");
  });

  it("names an instance by pod uid and the sandbox container's ID", () => {
    const pod = {
      metadata: { uid: "u1", annotations: { "agentbox.navix.sh/sandbox-containers": "box,other" } },
      spec: { containers: [{ name: "sidecar" }, { name: "box" }] },
      status: {
        containerStatuses: [
          { name: "sidecar", containerID: "containerd://s" },
          { name: "box", containerID: "containerd://b" },
        ],
      },
    } as unknown as Parameters<typeof instanceOfPod>[0];
    expect(instanceOfPod(pod)).toBe("u1/containerd://b");
    const plain = { ...pod, metadata: { uid: "u1" } } as Parameters<typeof instanceOfPod>[0];
    expect(instanceOfPod(plain)).toBe("u1/containerd://s");
  });
});
