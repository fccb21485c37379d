import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../lib/claims/openapi.ts";

describe("openApiDocument", () => {
  it("describes every /v1 route with request bodies from the validating schemas", () => {
    const doc = openApiDocument() as unknown as {
      paths: Record<string, Record<string, unknown>>;
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    expect(Object.keys(doc.paths).sort()).toEqual([
      "/history",
      "/history/{id}",
      "/sandboxes",
      "/sandboxes/{id}",
      "/sandboxes/{id}/logs",
      "/sandboxes/{id}/metrics",
      "/sandboxes/{id}/network",
      "/sandboxes/{id}/pause",
      "/sandboxes/{id}/resume",
      "/sandboxes/{id}/timeout",
      "/templates",
    ]);
    expect(Object.keys(doc.paths["/sandboxes"] ?? {}).sort()).toEqual(["get", "post"]);
    const create = doc.components.schemas.CreateSandboxRequest?.properties ?? {};
    for (const field of [
      "pool",
      "template",
      "image",
      "containerImages",
      "envVars",
      "metadata",
      "idleTimeout",
      "startupTimeout",
      "wait",
      "waitTimeout",
      "network",
    ]) {
      expect(create).toHaveProperty(field);
    }
    expect(doc.components.schemas.TimeoutRequest?.properties).toHaveProperty("timeout");
    expect(Object.keys(doc.components.schemas.NetworkUpdateRequest?.properties ?? {}).sort()).toEqual([
      "allowInternetAccess",
      "allowOut",
      "denyOut",
    ]);
    // A create answers how its sandbox is reached, as its GET does.
    expect(JSON.stringify(doc.paths["/sandboxes"]?.post)).toContain(
      '"201":{"description":"claimed","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Sandbox"}}}}',
    );
    expect(doc.components.schemas.Sandbox?.properties?.access).toMatchObject({
      description: expect.stringContaining("the create's answer"),
    });
    // The GET and the create show the network settings, in the create's own schema (no drift),
    // and a private sandbox's traffic token beside envd's.
    const sandboxProps = doc.components.schemas.Sandbox?.properties ?? {};
    expect(sandboxProps.network).toEqual({ $ref: "#/components/schemas/SandboxNetwork" });
    const network = doc.components.schemas.SandboxNetwork as { properties?: Record<string, unknown> };
    expect(network.properties).toEqual(
      (create.network as { properties?: Record<string, unknown> } | undefined)?.properties,
    );
    expect(Object.keys(network.properties ?? {}).sort()).toEqual([
      "allowInternetAccess",
      "allowOut",
      "allowPublicTraffic",
      "denyOut",
    ]);
    expect(
      (sandboxProps.access as { properties?: Record<string, unknown> } | undefined)?.properties,
    ).toHaveProperty("trafficAccessToken");
    // The network update answers the same settings.
    expect(JSON.stringify(doc.paths["/sandboxes/{id}/network"]?.put)).toContain(
      '"network":{"$ref":"#/components/schemas/SandboxNetwork"}',
    );
    // Pause answers the paused view; resume takes an optional lifetime and answers the sandbox.
    const sandboxSchema = doc.components.schemas.Sandbox as {
      properties: Record<string, { enum?: string[] }>;
    };
    expect(sandboxSchema.properties.phase?.enum).toContain("paused");
    expect(sandboxSchema.properties).toHaveProperty("pausedAt");
    expect(sandboxSchema.properties).toHaveProperty("lifetimeSeconds");
    expect(Object.keys(doc.paths["/sandboxes/{id}/pause"] ?? {})).toEqual(["post"]);
    expect(JSON.stringify(doc.paths["/sandboxes/{id}/resume"]?.post)).toContain(
      '"200":{"description":"the sandbox, running","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Sandbox"}}}}',
    );
    expect(Object.keys(doc.components.schemas.ResumeRequest?.properties ?? {}).sort()).toEqual([
      "timeout",
      "waitTimeout",
    ]);
    // One sandbox's history: its record and its lifecycle events, in the store's own schemas.
    expect(JSON.stringify(doc.paths["/history/{id}"]?.get)).toContain(
      '"events":{"type":"array","items":{"$ref":"#/components/schemas/LifecycleEvent"}}',
    );
    const event = doc.components.schemas.LifecycleEvent as {
      properties?: Record<string, { enum?: string[] }>;
      required?: string[];
    };
    expect(event.properties?.kind?.enum).toEqual(["paused", "resumed"]);
    expect(event.required).toEqual([
      "sandboxId",
      "kind",
      "n",
      "at",
      "namespace",
      "poolName",
      "podName",
      "images",
    ]);
    expect(doc.components.schemas.SandboxRecord?.properties).toHaveProperty("stopReason");
    expect(JSON.stringify(doc)).not.toContain("undefined");
  });
});
