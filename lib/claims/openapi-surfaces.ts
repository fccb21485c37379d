// The OpenAPI paths of a sandbox's own surfaces (metrics, logs, network rules) and of the
// template list: each served by a module of its own (http/sandbox-metrics.ts, sandbox-logs.ts,
// sandbox-network.ts, templates.ts), described here beside their answers' schemas so openapi.ts
// stays the document's outline.
import { errors, id, int, json, map, query, str } from "./openapi-parts.ts";

/** TEMPLATE is one entry of GET /templates (lib/claims/template-summaries.ts). */
const TEMPLATE = {
  type: "object",
  required: ["name", "aliases", "public", "pools", "envs", "ready", "degraded"],
  properties: {
    name: { type: "string", description: "the SandboxTemplate (cluster-scoped): a create's `template`" },
    aliases: { type: "array", items: str, description: "names a create accepts for it" },
    description: str,
    version: str,
    public: { type: "boolean", description: "every tenant may use it" },
    resources: {
      type: "object",
      description: "the pod template's main container (containers[0]) requests and limits",
      properties: { requests: map, limits: map },
    },
    pools: { type: "array", items: str, description: "live pools made from it (namespace/name)" },
    envs: { type: "array", items: str, description: "live Envs built on it (namespace/name)" },
    ready: { type: "boolean", description: "a create naming it finds an Env or a pool" },
    degraded: { type: "boolean", description: "its pod template cannot become a pod" },
    why: { type: "string", description: "why it is not ready" },
    createdAt: { type: "string", format: "date-time" },
  },
};

/** METRIC is one sample of GET /sandboxes/{id}/metrics (lib/usage/metric-answers.ts nativeMetric). */
const METRIC = {
  type: "object",
  required: [
    "at",
    "cpuCount",
    "cpuUsedPercent",
    "memoryUsedBytes",
    "memoryTotalBytes",
    "memoryCacheBytes",
    "diskUsedBytes",
    "diskTotalBytes",
  ],
  properties: {
    at: { type: "string", format: "date-time", description: "the sample period's start (whole seconds)" },
    cpuCount: {
      type: "integer",
      description: "the sandbox's CPUs: its CPU limit (else its node's), rounded up",
    },
    cpuUsedPercent: { type: "number", description: "CPU use in percent of cpuCount" },
    memoryUsedBytes: { type: "integer", description: "working set of the sandbox's containers" },
    memoryTotalBytes: { type: "integer", description: "its memory limit, else its node's allocatable" },
    memoryCacheBytes: { type: "integer", description: "page cache its memory usage counts" },
    diskUsedBytes: { type: "integer", description: "its containers' writable layers" },
    diskTotalBytes: {
      type: "integer",
      description: "its ephemeral-storage limit, else the filesystem's size",
    },
  },
};

/**
 * surfacePaths are the paths of the sandbox surfaces and the template list. The network update's
 * body and answer refer to the document's NetworkUpdateRequest and SandboxNetwork schemas.
 */
export function surfacePaths() {
  return {
    "/sandboxes/{id}/metrics": {
      get: {
        summary: "A sandbox's resource use over its life, oldest first (lib/usage/metric-answers.ts)",
        parameters: [
          id,
          query("from", "RFC 3339: samples at or after it", { type: "string", format: "date-time" }),
          query("to", "RFC 3339: samples at or before it", { type: "string", format: "date-time" }),
        ],
        responses: {
          "200": {
            description: "the sandbox's samples (its own containers only, from its claim on)",
            ...json({
              type: "object",
              properties: { sandboxId: str, metrics: { type: "array", items: METRIC } },
            }),
          },
          ...errors(400, 401, 404, 501, 503),
        },
      },
    },
    "/sandboxes/{id}/logs": {
      get: {
        summary:
          "A sandbox's logs since its claim: its container's log and its runtimes' LogDir files (the owner only; lib/logs)",
        parameters: [
          id,
          query("cursor", "Unix ms: forward pages start at it, backward pages end at it", int),
          query("limit", "0..1000, default 1000", int),
          query("direction", "forward | backward (default)"),
          query("level", "debug | info | warn | error: this level and above"),
          query("search", "case-sensitive substring of the message, at most 256 characters"),
          query("follow", "true: stream the page, then each new line (application/x-ndjson)"),
          query("idleTimeout", "seconds without a line before a follow ends, 1..3600, default 60", int),
        ],
        responses: {
          "200": {
            description:
              'the page; with follow=true one entry per line, then {"end": "released" | "idle" | "shutdown" | "error"}',
            ...json({
              type: "object",
              properties: {
                logs: {
                  type: "array",
                  items: {
                    type: "object",
                    required: ["timestamp", "level", "message", "fields"],
                    properties: {
                      timestamp: { type: "string", format: "date-time" },
                      level: { type: "string", enum: ["debug", "info", "warn", "error"] },
                      message: str,
                      fields: {
                        ...map,
                        description: "source (container | runtime), container or file, a JSON line's fields",
                      },
                    },
                  },
                },
              },
            }),
          },
          ...errors(400, 401, 404, 503),
        },
      },
    },
    "/sandboxes/{id}/network": {
      put: {
        summary:
          "Replace a sandbox's egress rules (CIDR blocks and IPs, its own NetworkPolicy; omitted fields are cleared, {} returns it to the namespace default; docs/egress.md)",
        parameters: [id],
        requestBody: { required: true, ...json({ $ref: "#/components/schemas/NetworkUpdateRequest" }) },
        responses: {
          "200": {
            description: "the settings now in force",
            ...json({
              type: "object",
              properties: { network: { $ref: "#/components/schemas/SandboxNetwork" } },
            }),
          },
          ...errors(400, 401, 404, 503),
        },
      },
    },
    "/templates": {
      get: {
        summary: "The templates you may create sandboxes from (lib/claims/template-summaries.ts)",
        responses: {
          "200": {
            description: "every template, sorted by name",
            ...json({ type: "object", properties: { templates: { type: "array", items: TEMPLATE } } }),
          },
          ...errors(401),
        },
      },
    },
  };
}
