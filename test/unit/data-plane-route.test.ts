import { describe, expect, it } from "vitest";
import { constantTimeEqual } from "../../lib/data-plane/constant-time-equal.ts";
import { cleanPath, envdPath } from "../../lib/data-plane/envd-paths.ts";
import { fileSignature } from "../../lib/data-plane/file-signature.ts";
import { endToEndHeaders } from "../../lib/data-plane/hop-by-hop.ts";
import { decideRoute, type RouteRequest, type SandboxRouteState } from "../../lib/data-plane/route.ts";

const token = "t".repeat(43);
const running: SandboxRouteState = { running: true, envdToken: token };
const envd = { port: 49983, sandboxId: "sbx-abc" };
/** now is the decisions' clock (Unix seconds); the pods' envd listens on 49983 unless said. */
const now = 1_800_000_000;
const ctx = { envdPort: 49983, nowSeconds: now };
const req = (method: string, target: string, headers: RouteRequest["headers"] = {}): RouteRequest => ({
  method,
  target,
  headers,
});
/** outcome is a decision in one word: forward, or the status and message of the refusal. */
const outcome = (d: ReturnType<typeof decideRoute>) =>
  d.action === "forward" ? `forward ${d.portClass}` : `${d.status} ${d.body.message}`;

describe("decideRoute", () => {
  it("forwards envd requests with the sandbox's token, refuses a missing or wrong one with 401", () => {
    const rpc = "/process.Process/Start";
    expect(decideRoute(req("POST", rpc, { "x-access-token": token }), envd, running, ctx)).toEqual({
      action: "forward",
      sandboxId: "sbx-abc",
      port: 49983,
      portClass: "envd",
      active: true,
    });
    expect(outcome(decideRoute(req("POST", rpc), envd, running, ctx))).toMatch(
      /^401 the X-Access-Token header is missing/,
    );
    for (const wrong of ["x", `${token}x`, token.slice(1), "", [token, token]])
      expect(outcome(decideRoute(req("POST", rpc, { "x-access-token": wrong }), envd, running, ctx))).toMatch(
        /^401 the X-Access-Token header is not this sandbox's/,
      );
  });

  it("lets GET /health through without a token (not as activity), and /files only with a valid signature", () => {
    expect(decideRoute(req("GET", "/health"), envd, running, ctx)).toMatchObject({
      action: "forward",
      portClass: "envd",
      active: false,
    });
    expect(decideRoute(req("GET", "/health", { "x-access-token": token }), envd, running, ctx)).toMatchObject(
      {
        action: "forward",
        active: true,
      },
    );
    expect(
      decideRoute(req("GET", "/health", { "x-access-token": "nope" }), envd, running, ctx),
    ).toMatchObject({
      action: "forward",
      active: false,
    });
    // As the SDK puts them in URLs (searchParams.set): base64's `+` and `/` percent-encoded.
    const read = encodeURIComponent(fileSignature("/etc/hosts", "read", "root", token));
    const write = encodeURIComponent(fileSignature("/tmp/up", "write", "", token, now + 60));
    const signedRead = `/files?path=%2Fetc%2Fhosts&username=root&signature=${read}`;
    const signedWrite = `/files?path=/tmp/up&signature=${write}&signature_expiration=${now + 60}`;
    expect(decideRoute(req("GET", signedRead), envd, running, ctx)).toMatchObject({
      action: "forward",
      active: true,
    });
    expect(outcome(decideRoute(req("POST", signedWrite), envd, running, ctx))).toBe("forward envd");
    // A signature envd would have taken unchecked (it has no token), a signature of something else
    // (another path, user, operation or sandbox), an expired one, a parameter twice: no.
    for (const [method, target, why] of [
      ["GET", "/files?path=/etc/shadow&username=root&signature=x", /not valid/],
      ["GET", "/files?path=/etc/shadow&username=root&signature=v1_x", /not valid/],
      ["GET", signedRead.replace("hosts", "shadow"), /not valid/],
      ["GET", signedRead.replace("root", "user"), /not valid/],
      ["POST", signedRead, /not valid/],
      ["GET", signedWrite, /not valid/],
      [
        "GET",
        `/files?path=%2Fetc%2Fhosts&username=root&signature=${encodeURIComponent(fileSignature("/etc/hosts", "read", "root", "u".repeat(43)))}`,
        /not valid/,
      ],
      ["POST", signedWrite.replace(String(now + 60), String(now - 1)), /not valid/],
      ["GET", `${signedRead}&path=/etc/shadow`, /path parameter is given more than once/],
      ["GET", `${signedRead}&signature=${read}`, /signature parameter is given more than once/],
      ["GET", "/files?path=a&signature=", /signature parameter is missing/],
      ["GET", "/files?path=a", /signature parameter is missing/],
      ["POST", `/files?path=/tmp/up&signature=${write}&signature_expiration=1e9`, /not a Unix time/],
    ] as const)
      expect(outcome(decideRoute(req(method, target), envd, running, ctx))).toMatch(
        new RegExp(`^401 the X-Access-Token header is missing and the URL is not signed: .*${why.source}`),
      );
    const expired = encodeURIComponent(fileSignature("/tmp/up", "write", "", token, now - 1));
    expect(
      outcome(
        decideRoute(
          req("POST", `/files?path=/tmp/up&signature=${expired}&signature_expiration=${now - 1}`),
          envd,
          running,
          ctx,
        ),
      ),
    ).toMatch(/^401 .*the signature has expired/);
    // Another method, another spelling of the path, or a wrong token: the token is needed.
    for (const [method, target, headers] of [
      ["DELETE", `/files?path=%2Fetc%2Fhosts&username=root&signature=${read}`, {}],
      ["GET", `//files?path=%2Fetc%2Fhosts&username=root&signature=${read}`, {}],
      ["GET", `/files/?path=%2Fetc%2Fhosts&username=root&signature=${read}`, {}],
      ["POST", "/health", {}],
      ["GET", "/x/../health", {}],
      ["GET", signedRead, { "x-access-token": "wrong" }],
    ] as const)
      expect(decideRoute(req(method, target, headers), envd, running, ctx)).toMatchObject({
        action: "refuse",
        status: 401,
      });
  });

  it("applies envd's rules on the pods' envd port too, and refuses every envd port of a sandbox without envd", () => {
    const moved = { envdPort: 40000, nowSeconds: now };
    const direct = { port: 40000, sandboxId: "sbx-abc" };
    for (const address of [envd, direct]) {
      expect(decideRoute(req("POST", "/init"), address, running, moved)).toMatchObject({ status: 404 });
      expect(outcome(decideRoute(req("POST", "/process.Process/Start"), address, running, moved))).toMatch(
        /^401 the X-Access-Token header is missing/,
      );
      expect(
        decideRoute(
          req("POST", "/process.Process/Start", { "x-access-token": token }),
          address,
          running,
          moved,
        ),
      ).toEqual({ action: "forward", ...address, portClass: "envd", active: true });
      const none = { ...running, runsEnvd: false };
      for (const [method, target, headers] of [
        ["GET", "/health", {}],
        ["POST", "/process.Process/Start", { "x-access-token": token }],
      ] as const)
        expect(outcome(decideRoute(req(method, target, headers), address, none, moved))).toMatch(
          /^404 this sandbox runs no envd/,
        );
    }
    // Elsewhere the port is the sandbox's own, as before.
    expect(outcome(decideRoute(req("POST", "/init"), direct, running, ctx))).toBe("forward other");
  });

  it("never reaches envd's control routes, whatever the method, spelling or sandbox", () => {
    for (const target of [
      "/init",
      "/INIT",
      "//init",
      "/init/",
      "/files/../init",
      "/%69nit",
      "/upgrade/x",
      "/fsfreeze?x=1",
    ])
      for (const sandbox of [running, undefined]) {
        const d = decideRoute(req("POST", target, { "x-access-token": token }), envd, sandbox, ctx);
        expect(d).toMatchObject({ action: "refuse", status: 404, body: { code: 404 } });
        // The answer names no sandbox: it says nothing about whether this one exists.
        expect(d.action === "refuse" ? Object.keys(d.body).sort() : []).toEqual(["code", "message", "path"]);
      }
    expect(
      outcome(decideRoute(req("GET", "/initial", { "x-access-token": token }), envd, running, ctx)),
    ).toBe("forward envd");
    expect(decideRoute(req("GET", "/%zz", { "x-access-token": token }), envd, running, ctx)).toMatchObject({
      status: 400,
    });
    expect(decideRoute(req("GET", "*"), envd, running, ctx)).toMatchObject({ status: 400 });
  });

  it("answers E2B's 502 for a sandbox that is unknown or not running, with CORS and JSON", () => {
    for (const sandbox of [undefined, { ...running, running: false }])
      for (const port of [49983, 3000])
        expect(decideRoute(req("GET", "/health"), { port, sandboxId: "sbx-abc" }, sandbox, ctx)).toEqual({
          action: "refuse",
          status: 502,
          headers: { "content-type": "application/json", "access-control-allow-origin": "*" },
          body: { sandboxId: "sbx-abc", message: "The sandbox was not found", code: 502 },
        });
  });

  it("keeps envd closed but /health when the sandbox's token is unknown (no sealing key)", () => {
    const tokenless = { running: true };
    expect(outcome(decideRoute(req("GET", "/health"), envd, tokenless, ctx))).toBe("forward envd");
    for (const [target, headers] of [
      ["/process.Process/List", { "x-access-token": "anything" }],
      [`/files?signature=${fileSignature("", "write", "", "")}`, {}],
    ] as const)
      expect(outcome(decideRoute(req("POST", target, headers), envd, tokenless, ctx))).toMatch(
        /^401 .*no sealing key/,
      );
  });

  it("follows E2B's traffic-token rule on other ports: public by default, else the token (403)", () => {
    const web = { port: 3000, sandboxId: "sbx-abc" };
    expect(decideRoute(req("GET", "/init"), web, running, ctx)).toEqual({
      action: "forward",
      sandboxId: "sbx-abc",
      port: 3000,
      portClass: "other",
      active: true,
    });
    const secured = { ...running, trafficToken: "traffic" };
    expect(
      outcome(decideRoute(req("GET", "/", { "e2b-traffic-access-token": "traffic" }), web, secured, ctx)),
    ).toBe("forward other");
    expect(outcome(decideRoute(req("GET", "/"), web, secured, ctx))).toMatch(
      /^403 .*'e2b-traffic-access-token' is missing/,
    );
    expect(
      outcome(decideRoute(req("GET", "/", { "e2b-traffic-access-token": "nope" }), web, secured, ctx)),
    ).toMatch(/^403 .*is invalid/);
    // The envd token opens envd only.
    expect(outcome(decideRoute(req("GET", "/", { "x-access-token": token }), web, secured, ctx))).toMatch(
      /^403/,
    );
  });
});

describe("envdPath", () => {
  it("classifies envd's public, private and control routes", () => {
    expect(envdPath("GET", "/health")).toEqual({ kind: "health" });
    expect(envdPath("HEAD", "/health")).toEqual({ kind: "health" });
    expect(envdPath("POST", "/files")).toEqual({ kind: "files" });
    expect(envdPath("POST", "/filesystem.Filesystem/ListDir")).toEqual({ kind: "private" });
    expect(envdPath("GET", "/envs")).toEqual({ kind: "private" });
    expect(envdPath("POST", "/a/..%2F..%2Finit")).toEqual({ kind: "internal", path: "/init" });
    expect(envdPath("POST", "/a\\..\\init")).toEqual({ kind: "internal", path: "/init" });
    expect(envdPath("POST", "/%E0%A4%A")).toEqual({ kind: "bad" });
  });

  it("cleans paths as path.posix.normalize does, without a trailing slash", () => {
    expect(cleanPath("/a//b/./c/../d/")).toBe("/a/b/d");
    expect(cleanPath("/../../x")).toBe("/x");
    expect(cleanPath("/")).toBe("/");
  });
});

describe("constantTimeEqual", () => {
  it("is string equality", () => {
    expect(constantTimeEqual("abc", "abc")).toBe(true);
    expect(constantTimeEqual("", "")).toBe(true);
    for (const [a, b] of [
      ["abc", "abd"],
      ["abc", "ab"],
      ["ab", "abc"],
      ["", "a"],
      ["a\u0000", "a"],
      ["é", "e"],
    ])
      expect(constantTimeEqual(a ?? "", b ?? "")).toBe(false);
  });
});

describe("endToEndHeaders", () => {
  it("drops hop-by-hop fields, those Connection lists and pseudo-headers; keeps TE: trailers", () => {
    expect(
      endToEndHeaders({
        ":authority": "49983-sbx-a.example.com",
        host: "49983-sbx-a.example.com",
        connection: "keep-alive, X-Trace, close",
        "keep-alive": "timeout=5",
        "x-trace": "1",
        "proxy-connection": "keep-alive",
        "proxy-authorization": "Basic x",
        te: "trailers, deflate",
        "transfer-encoding": "chunked",
        upgrade: "websocket",
        "http2-settings": "AAA",
        "x-access-token": "tok",
        "set-cookie": ["a=1", "b=2"],
        "content-length": undefined,
      }),
    ).toEqual({
      host: "49983-sbx-a.example.com",
      te: "trailers",
      "x-access-token": "tok",
      "set-cookie": ["a=1", "b=2"],
    });
  });

  it("keeps Upgrade with Connection: upgrade when the proxy forwards an upgrade", () => {
    expect(
      endToEndHeaders(
        { connection: "Upgrade", upgrade: "websocket", "sec-websocket-key": "k", te: "gzip" },
        { upgrade: true },
      ),
    ).toEqual({ connection: "upgrade", upgrade: "websocket", "sec-websocket-key": "k" });
    expect(endToEndHeaders({ connection: "keep-alive" }, { upgrade: true })).toEqual({});
  });
});
