import { describe, expect, it } from "vitest";
import { basicAuthFetch, parseAgentFlags } from "../../hosts/snapshot-agent/flags.ts";

// The snapshot agent's command line (hosts/snapshot-agent/flags.ts).

describe("parseAgentFlags", () => {
  it("reads the settings and maps the snapshot registry's name to its URL", () => {
    const parsed = parseAgentFlags([
      "--field-selector=spec.source.node=real-node-0",
      "--kubeconfig=/k",
      "--registry-url=http://127.0.0.1:5000/",
      "--registry-url=docker.io=https://mirror.example",
      "--commit-timeout-s=30",
    ]);
    expect(parsed).toMatchObject({
      ok: true,
      value: {
        kubeconfig: "/k",
        fieldSelector: "spec.source.node=real-node-0",
        registryName: "registry.agentbox.test",
        endpoints: {
          "registry.agentbox.test": "http://127.0.0.1:5000",
          "docker.io": "https://mirror.example",
        },
        commitTimeoutMs: 30_000,
      },
    });
  });

  it("takes an empty registry URL (an unset setting) as none", () => {
    const parsed = parseAgentFlags(["--field-selector=spec.source.node!=real-node-0", "--registry-url="]);
    expect(parsed.ok && parsed.value.endpoints).toEqual({});
    const both = parseAgentFlags(["--field-selector=spec.source.node!=a,spec.source.node!=b"]);
    expect(both.ok && both.value.fieldSelector).toBe("spec.source.node!=a,spec.source.node!=b");
  });

  it("refuses a missing or foreign field selector, credentials in a URL and a bad timeout, naming the flag", () => {
    expect(parseAgentFlags([])).toMatchObject({
      ok: false,
      error: expect.stringContaining("--field-selector"),
    });
    expect(parseAgentFlags(["--field-selector=metadata.name=x"])).toMatchObject({ ok: false });
    expect(parseAgentFlags(["--field-selector=spec.source.node=a,metadata.name=x"])).toMatchObject({
      ok: false,
    });
    expect(
      parseAgentFlags(["--field-selector=spec.source.node=n", "--registry-url=http://u:secret@r:5000"]),
    ).toEqual({ ok: false, error: expect.not.stringContaining("secret") });
    expect(parseAgentFlags(["--field-selector=spec.source.node=n", "--commit-timeout-s=0"])).toMatchObject({
      ok: false,
      error: expect.stringContaining("--commit-timeout-s"),
    });
    expect(parseAgentFlags(["--field-selector=spec.source.node=n", "--bogus"])).toMatchObject({ ok: false });
  });
});

describe("basicAuthFetch", () => {
  it("adds basic auth to the snapshot registry's requests only", async () => {
    const seen: { url: string; auth: string | null }[] = [];
    const inner = (async (input: string | URL | Request, init?: RequestInit) => {
      seen.push({ url: String(input), auth: new Headers(init?.headers).get("authorization") });
      return new Response("");
    }) as typeof fetch;
    const f = basicAuthFetch("http://127.0.0.1:5000", "u:p", inner);
    await f("http://127.0.0.1:5000/v2/x/manifests/g1", { headers: { accept: "a" } });
    await f("http://127.0.0.1:50001/v2/");
    expect(seen).toEqual([
      {
        url: "http://127.0.0.1:5000/v2/x/manifests/g1",
        auth: `Basic ${Buffer.from("u:p").toString("base64")}`,
      },
      { url: "http://127.0.0.1:50001/v2/", auth: null },
    ]);
  });
});
