import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { kwokMetricsWiring, ownAddress } from "../../infra/cluster/kwok-metrics.ts";
import { RESOURCE_METRICS_ANNOTATION } from "../../lib/usage/resource-metrics.ts";

describe("kwokMetricsWiring", () => {
  it("points kwok's server and each node's annotation at one port on this machine's address", async () => {
    const dir = mkdtempSync(join(tmpdir(), "kwok-metrics-"));
    const config = join(dir, "kwok.yaml");
    writeFileSync(config, "kind: Stage\n");
    const logged: string[] = [];
    const wiring = await kwokMetricsWiring(config, (l) => logged.push(l));
    const written = readFileSync(config, "utf8");
    rmSync(dir, { recursive: true, force: true });
    const address = ownAddress();
    if (!address) {
      // A machine without an address of its own: kwok's nodes get a placeholder IP and no metrics.
      expect(wiring.args).toEqual(["--node-ip=10.240.0.1"]);
      expect(wiring.annotations("kwok-node-0")).toEqual({});
      expect(written).toBe("kind: Stage\n");
      expect(logged).toHaveLength(1);
      return;
    }
    const server = wiring.args.find((a) => a.startsWith("--server-address="));
    const port = Number(server?.split(":").at(-1));
    expect(wiring.args).toEqual([`--node-ip=${address}`, `--server-address=${address}:${port}`]);
    expect(port).toBeGreaterThan(0);
    expect(wiring.annotations("kwok-node-1")).toEqual({
      [RESOURCE_METRICS_ANNOTATION]: `http:kwok-node-1:${port}/metrics/nodes/kwok-node-1/metrics/resource`,
    });
    // The usage simulation follows the config's own documents.
    expect(written).toMatch(/^kind: Stage\n\n---\n[\s\S]+/);
    expect(logged).toEqual([]);
  });
});
