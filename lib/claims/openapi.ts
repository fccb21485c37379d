import { toJsonSchema } from "@valibot/to-json-schema";
import type { GenericSchema } from "valibot";
import { CreateSandboxRequest, NetworkUpdateRequest, TimeoutRequest } from "./schemas.ts";

/** jsonSchema renders a request schema for the document (checks it cannot express are left out). */
const jsonSchema = (schema: GenericSchema) =>
  toJsonSchema(schema, { errorMode: "ignore", target: "openapi-3.0" });

const str = { type: "string" };
const int = { type: "integer" };
const map = { type: "object", additionalProperties: str };

/** SANDBOX is the response shape of every call that returns a sandbox (lib/claims/sandbox-view.ts). */
const SANDBOX = {
  type: "object",
  required: ["sandboxId", "namespace", "pool", "pod", "phase", "images", "metadata"],
  properties: {
    sandboxId: str,
    namespace: str,
    pool: str,
    pod: str,
    phase: { type: "string", enum: ["starting", "running", "stopping", "failed"] },
    team: str,
    user: str,
    claimedAt: { type: "string", format: "date-time" },
    startedAt: { type: "string", format: "date-time" },
    images: map,
    metadata: map,
    idleTimeoutSeconds: int,
    startupTimeoutSeconds: int,
    podIP: str,
    detail: { type: "object", properties: { reason: str, message: str, lastUpdatedTime: str } },
    // GET /sandboxes/{id} and the create's 201: how its ports are reached (viewWithAccess).
    access: {
      type: "object",
      description:
        "How the sandbox is reached (GET /sandboxes/{id} and the create's answer): its URLs when a sandbox domain is configured, and envd's X-Access-Token to the sandbox's owner only (never to an admin key looking at another tenant's sandbox)",
      properties: {
        domain: str,
        urlPattern: { type: "string", description: "every port's URL: replace {port}" },
        envdUrl: str,
        envdAccessToken: { type: "string", description: "the sandbox owner's only" },
      },
    },
  },
};

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

const ERROR = {
  type: "object",
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: {
        code: str,
        message: str,
        fields: { type: "array", items: { type: "object", properties: { path: str, message: str } } },
        choices: { type: "array", items: str },
        sandbox: SANDBOX,
      },
    },
  },
};

const json = (schema: unknown) => ({ content: { "application/json": { schema } } });
const errors = (...codes: number[]) =>
  Object.fromEntries(
    codes.map((c) => [String(c), { description: "error", ...json({ $ref: "#/components/schemas/Error" }) }]),
  );
const query = (name: string, description: string, schema: unknown = str) => ({
  name,
  in: "query",
  required: false,
  description,
  schema,
});
const id = { name: "id", in: "path", required: true, schema: str };
const sandbox = { $ref: "#/components/schemas/Sandbox" };

/**
 * openApiDocument describes the /v1 API. Request bodies come from the same valibot schemas that
 * validate them, so the document cannot drift from what the server accepts.
 */
export function openApiDocument(serverUrl = "/v1") {
  return {
    openapi: "3.0.3",
    info: { title: "agentbox-functions sandbox API", version: "v1" },
    servers: [{ url: serverUrl }],
    security: [{ apiKey: [] }, { bearer: [] }],
    components: {
      securitySchemes: {
        apiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
        bearer: { type: "http", scheme: "bearer" },
      },
      schemas: {
        Sandbox: SANDBOX,
        Error: ERROR,
        CreateSandboxRequest: jsonSchema(CreateSandboxRequest),
        TimeoutRequest: jsonSchema(TimeoutRequest),
        NetworkUpdateRequest: jsonSchema(NetworkUpdateRequest),
      },
    },
    paths: {
      "/sandboxes": {
        post: {
          summary: "Claim an idle sandbox (optionally wait until it runs)",
          requestBody: { required: true, ...json({ $ref: "#/components/schemas/CreateSandboxRequest" }) },
          responses: {
            "201": { description: "claimed", ...json(sandbox) },
            ...errors(400, 401, 404, 503, 504),
          },
        },
        get: {
          summary: "List your sandboxes",
          parameters: [
            query("pool", "namespace/name"),
            query("phase", "starting | running | stopping | failed"),
            query("metadata", "k=v,k2=v2"),
            query("limit", "1..500, default 100", int),
            query("continue", "token of the previous page"),
          ],
          responses: {
            "200": {
              description: "a page",
              ...json({
                type: "object",
                properties: { sandboxes: { type: "array", items: sandbox }, continue: str },
              }),
            },
            ...errors(400, 401),
          },
        },
      },
      "/sandboxes/{id}": {
        get: {
          summary: "Get a sandbox",
          parameters: [id],
          responses: { "200": { description: "the sandbox", ...json(sandbox) }, ...errors(401, 404) },
        },
        delete: {
          summary: "Release a sandbox (idempotent)",
          parameters: [id],
          responses: { "204": { description: "released" }, ...errors(401, 404) },
        },
      },
      "/sandboxes/{id}/timeout": {
        post: {
          summary: "Set the idle timeout",
          parameters: [id],
          requestBody: { required: true, ...json({ $ref: "#/components/schemas/TimeoutRequest" }) },
          responses: { "200": { description: "the sandbox", ...json(sandbox) }, ...errors(400, 401, 404) },
        },
      },
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
                          description:
                            "source (container | runtime), container or file, a JSON line's fields",
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
              ...json({ type: "object", properties: { network: { type: "object" } } }),
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
      "/history": {
        get: {
          summary: "Finished sandboxes",
          parameters: ["namespace", "pool", "team", "user", "from", "to", "after"]
            .map((n) => query(n, n))
            .concat(query("limit", "1..1000", int)),
          responses: { "200": { description: "a page of records" }, ...errors(400, 401, 503) },
        },
      },
    },
  };
}
