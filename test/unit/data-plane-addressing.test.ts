import { describe, expect, it } from "vitest";
import { requestTarget } from "../../lib/data-plane/request-target.ts";
import { checkSandboxDomain } from "../../lib/data-plane/sandbox-domain.ts";
import { hostnameOf, parseSandboxHost, sandboxHost } from "../../lib/data-plane/sandbox-host.ts";
import { newSandboxId } from "../../lib/lifecycle/sandbox-ids.ts";

const domain = "sandbox.example.com";

describe("sandbox ids as DNS labels", () => {
  it("fit one DNS label with any port in front, and read back from the host the SDK builds", () => {
    for (let i = 0; i < 1000; i++) {
      const id = newSandboxId();
      for (const port of [1, 3000, 49983, 65535]) {
        const label = `${port}-${id}`;
        expect(label.length).toBeLessThanOrEqual(63);
        expect(label).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
        expect(parseSandboxHost(sandboxHost(port, id, domain), domain)).toEqual({
          ok: true,
          address: { port, sandboxId: id },
        });
      }
    }
  });
});

describe("parseSandboxHost", () => {
  it("reads <port>-<id>.<domain> and the pre-1.7 <port>-<id>-<clientID> form", () => {
    expect(parseSandboxHost(`49983-sbx-abc.${domain}`, domain)).toEqual({
      ok: true,
      address: { port: 49983, sandboxId: "sbx-abc" },
    });
    expect(parseSandboxHost(`3000-sbx-abc-agentbox.${domain}`, domain)).toEqual({
      ok: true,
      address: { port: 3000, sandboxId: "sbx-abc" },
    });
  });

  it("says why a host names no sandbox port", () => {
    const problem = (host: string) => {
      const r = parseSandboxHost(host, domain);
      return r.ok ? "ok" : r.problem;
    };
    expect(problem("49983-sbx-abc.other.com")).toBe("not-under-domain");
    expect(problem(domain)).toBe("not-under-domain");
    expect(problem(`a.49983-sbx-abc.${domain}`)).toBe("malformed");
    expect(problem(`sbx-abc.${domain}`)).toBe("bad-port");
    expect(problem(`49983.${domain}`)).toBe("malformed");
    expect(problem(`49983-.${domain}`)).toBe("malformed");
    expect(problem(`49983-sbx_abc.${domain}`)).toBe("malformed");
    expect(problem(`0-sbx-abc.${domain}`)).toBe("bad-port");
    expect(problem(`049983-sbx-abc.${domain}`)).toBe("bad-port");
    expect(problem(`65536-sbx-abc.${domain}`)).toBe("bad-port");
    expect(problem(`-agentbox.${domain}`)).toBe("bad-port");
    expect(problem(`1--agentbox.${domain}`)).toBe("malformed");
  });
});

describe("hostnameOf", () => {
  it("drops the listener's port, a trailing dot and case; refuses what is no host", () => {
    expect(hostnameOf("49983-SBX-abc.Sandbox.Example.com.:443")).toBe("49983-sbx-abc.sandbox.example.com");
    expect(hostnameOf("[::1]:8443")).toBe("[::1]");
    expect(hostnameOf("10.0.0.7")).toBe("10.0.0.7");
    for (const bad of ["", " ", "a b", "a/b", "[::1", "host:port", "x:123456", "user@host"])
      expect(hostnameOf(bad)).toBeUndefined();
  });
});

describe("requestTarget", () => {
  const addressing = { domain, routerNames: ["router.internal"] };
  const target = (host: string | undefined, headers: Record<string, string | string[]> = {}) =>
    requestTarget(host, headers, addressing);

  it("routes by name under the domain, ignoring routing headers there", () => {
    expect(target(`49983-sbx-abc.${domain}:443`, { "e2b-sandbox-id": "sbx-other" })).toEqual({
      ok: true,
      via: "host",
      port: 49983,
      sandboxId: "sbx-abc",
    });
  });

  it("routes by E2b-Sandbox-Id and E2b-Sandbox-Port when the host is an IP, localhost or the router", () => {
    const headers = { "e2b-sandbox-id": "sbx-abc", "e2b-sandbox-port": "49983" };
    for (const host of [
      "10.1.2.3:8443",
      "[fd00::1]:8443",
      "localhost:3000",
      "router.internal",
      "ROUTER.internal.",
    ])
      expect(target(host, headers)).toEqual({ ok: true, via: "headers", port: 49983, sandboxId: "sbx-abc" });
    // Header routing works without a sandbox domain too.
    expect(requestTarget("127.0.0.1", headers, {})).toMatchObject({ ok: true, via: "headers" });
  });

  it("answers a bad host or routing header with a 400 naming it", () => {
    const message = (host: string | undefined, headers: Record<string, string | string[]> = {}) => {
      const r = target(host, headers);
      return r.ok ? "ok" : `${r.status} ${r.message}`;
    };
    expect(message(undefined)).toMatch(/^400 the request's Host is missing/);
    expect(message("bad host")).toMatch(/^400 the request's Host/);
    expect(message("127.0.0.1")).toMatch(/^400 .*E2b-Sandbox-Id and E2b-Sandbox-Port/);
    expect(message("127.0.0.1", { "e2b-sandbox-port": "49983" })).toMatch(/E2b-Sandbox-Id header is missing/);
    expect(message("127.0.0.1", { "e2b-sandbox-id": "sbx-a" })).toMatch(/E2b-Sandbox-Port header is missing/);
    expect(message("127.0.0.1", { "e2b-sandbox-id": "sbx-a", "e2b-sandbox-port": "http" })).toMatch(
      /E2b-Sandbox-Port header is not a port/,
    );
    expect(message("127.0.0.1", { "e2b-sandbox-id": "a,b=c", "e2b-sandbox-port": "1" })).toMatch(
      /E2b-Sandbox-Id header is not a sandbox id/,
    );
    expect(message("127.0.0.1", { "e2b-sandbox-id": ["a", "b"], "e2b-sandbox-port": "1" })).toMatch(
      /E2b-Sandbox-Id header is missing \(one value\)/,
    );
    expect(message("49983-sbx-a.example.org")).toBe(
      `400 the host 49983-sbx-a.example.org is not under ${domain}`,
    );
    expect(message(`99999-sbx-a.${domain}`)).toMatch(/names no port in 1-65535/);
    expect(message(`x.y.${domain}`)).toMatch(/is not <port>-<sandboxId>/);
    expect(requestTarget("49983-sbx-a.example.org", {}, {})).toMatchObject({
      ok: false,
      message: expect.stringMatching(/^no sandbox domain is configured/),
    });
  });
});

describe("checkSandboxDomain", () => {
  it("takes a DNS name, in lower case", () => {
    expect(checkSandboxDomain("Sandbox.Example.COM")).toEqual({ ok: true, domain: "sandbox.example.com" });
    expect(checkSandboxDomain("sandbox.localhost")).toEqual({ ok: true, domain: "sandbox.localhost" });
  });

  it("refuses what is no DNS name, or too long for a sandbox label in front", () => {
    for (const bad of [
      "",
      "https://sandbox.example.com",
      "sandbox.example.com:443",
      "a..b",
      "-a.b",
      "a_b.c",
      "a.b.",
    ])
      expect(checkSandboxDomain(bad)).toMatchObject({ ok: false, error: expect.stringMatching(/DNS/) });
    expect(checkSandboxDomain(`${"a".repeat(60)}.${"b".repeat(60)}.${"c".repeat(63)}.comx`)).toMatchObject({
      ok: false,
      error: "must have at most 189 characters",
    });
  });

  it("refuses E2B's domains and those the SDK sends to E2B", () => {
    for (const e2b of ["e2b.app", "e2b.dev", "sandbox.e2b.dev", "x.e2b.pro", "e2b-staging.dev", "e2b.io"])
      expect(checkSandboxDomain(e2b)).toMatchObject({ ok: false, error: expect.stringMatching(/not E2B's/) });
    expect(checkSandboxDomain("e2b.example.com")).toMatchObject({ ok: true });
  });
});
