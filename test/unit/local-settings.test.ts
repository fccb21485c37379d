import { describe, expect, it } from "vitest";
import { DATA_PLANE_PORT } from "../../hosts/node/data-plane/settings.ts";
import { readLocalSettings } from "../../hosts/node/local-settings.ts";

// `npm start` takes the tick, console, router, cluster and instance settings from the
// environment through the in-cluster host's own schema: defaults as the host's, and a bad value
// stops it with the variable named.

describe("readLocalSettings", () => {
  it("gives the host's defaults for an empty environment: the router on 127.0.0.1 plain, no TLS", () => {
    expect(readLocalSettings({})).toEqual({
      ok: true,
      value: {
        tickSeconds: 10,
        consoleSampleSeconds: 30,
        dataPlane: { host: "127.0.0.1", plainPort: DATA_PLANE_PORT },
        adoptPools: false,
      },
    });
  });

  it("takes the instance id, console sampling, router port, TLS port and router flags", () => {
    const read = readLocalSettings({
      AGENTBOX_INSTANCE_ID: "laptop-2",
      AGENTBOX_CONSOLE_SAMPLE_SECONDS: "5",
      AGENTBOX_TICK_SECONDS: "3",
      AGENTBOX_DATA_PLANE_PORT: "18080",
      AGENTBOX_DATA_PLANE_TLS_PORT: "18443",
      AGENTBOX_DATA_PLANE_NODE_FLAGS: "thread",
      AGENTBOX_SANDBOX_DOMAIN: "sbx.example.test",
      AGENTBOX_CLUSTER_ID: "eu-west-1",
      AGENTBOX_ADOPT_POOLS: "true",
    });
    expect(read).toEqual({
      ok: true,
      value: {
        tickSeconds: 3,
        consoleSampleSeconds: 5,
        sandboxDomain: "sbx.example.test",
        dataPlane: { host: "127.0.0.1", plainPort: 18080, tlsPort: 18443, runsIn: "thread" },
        clusterId: "eu-west-1",
        instanceId: "laptop-2",
        adoptPools: true,
      },
    });
    const off = readLocalSettings({ AGENTBOX_DATA_PLANE_TLS_PORT: "off" });
    expect(off.ok && off.value.dataPlane).toEqual({ host: "127.0.0.1", plainPort: DATA_PLANE_PORT });
  });

  it("names each bad variable", () => {
    const read = readLocalSettings({
      AGENTBOX_INSTANCE_ID: "Not A Label",
      AGENTBOX_CONSOLE_SAMPLE_SECONDS: "7200",
      AGENTBOX_DATA_PLANE_NODE_FLAGS: "--ok /tmp/evil.js",
    });
    expect(read.ok).toBe(false);
    const errors = read.ok ? [] : read.errors;
    expect(errors.map((e) => e.split(":")[0]).sort()).toEqual([
      "AGENTBOX_CONSOLE_SAMPLE_SECONDS",
      "AGENTBOX_DATA_PLANE_NODE_FLAGS",
      "AGENTBOX_INSTANCE_ID",
    ]);
  });
});
