import { LifecycleEvent } from "../history/lifecycle-event.ts";
import { SandboxRecord } from "../history/record.ts";
import { errors, id, int, json, jsonSchema, map, query, sandbox, str } from "./openapi-parts.ts";
import { surfacePaths } from "./openapi-surfaces.ts";
import { PauseRequest, ResumeRequest } from "./paused-view.ts";
import { CreateSandboxRequest, NetworkUpdateRequest, TimeoutRequest } from "./schemas.ts";

/**
 * SANDBOX is the response shape of every call that returns a sandbox (lib/claims/sandbox-view.ts;
 * a paused one from lib/claims/paused-view.ts).
 */
const SANDBOX = {
  type: "object",
  required: ["sandboxId", "namespace", "pool", "pod", "phase", "images", "metadata"],
  properties: {
    sandboxId: str,
    namespace: str,
    pool: str,
    pod: { type: "string", description: "the pod it runs in; empty while paused (it holds none)" },
    phase: { type: "string", enum: ["starting", "running", "stopping", "failed", "paused"] },
    team: str,
    user: str,
    claimedAt: { type: "string", format: "date-time" },
    startedAt: { type: "string", format: "date-time" },
    images: map,
    metadata: map,
    idleTimeoutSeconds: int,
    startupTimeoutSeconds: int,
    endAt: { type: "string", format: "date-time", description: "end of its lifetime; none while paused" },
    pausedAt: { type: "string", format: "date-time", description: "when a paused sandbox was paused" },
    lifetimeSeconds: {
      type: "integer",
      description: "a paused sandbox's lifetime left at the pause: what a resume without a timeout gets",
    },
    retainUntil: {
      type: "string",
      format: "date-time",
      description: "a paused sandbox not resumed by then is deleted with its files",
    },
    snapshotBytes: {
      type: "integer",
      description: "a paused sandbox's size: the bytes of the layers its last pause committed",
    },
    podIP: str,
    detail: { type: "object", properties: { reason: str, message: str, lastUpdatedTime: str } },
    // GET /sandboxes/{id} and the create's 201 (viewWithAccess): its network settings, and how
    // its ports are reached. The list leaves both out.
    network: { $ref: "#/components/schemas/SandboxNetwork" },
    access: {
      type: "object",
      description:
        "How the sandbox is reached (GET /sandboxes/{id} and the create's answer): its URLs when a sandbox domain is configured, and its tokens to the sandbox's owner only (never to an admin key looking at another tenant's sandbox)",
      properties: {
        domain: str,
        urlPattern: { type: "string", description: "every port's URL: replace {port}" },
        envdUrl: str,
        envdAccessToken: { type: "string", description: "envd's X-Access-Token; the sandbox owner's only" },
        trafficAccessToken: {
          type: "string",
          description:
            "when its ports are private (network.allowPublicTraffic false): the token every port but envd's asks for; the sandbox owner's only",
        },
      },
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

/**
 * sandboxNetwork is a sandbox's network settings as GET /sandboxes/{id}, the create's answer and
 * PUT /sandboxes/{id}/network show them: the create's `network` schema (so it cannot drift from
 * what a create accepts), as the pod stores them.
 */
function sandboxNetwork() {
  const create = jsonSchema(CreateSandboxRequest) as { properties?: Record<string, object> };
  return {
    ...create.properties?.network,
    description:
      "The sandbox's egress rules and port privacy as the create or the last network update set them (an update keeps allowPublicTraffic); {} is the namespace's default egress with public ports",
  };
}

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
        PauseRequest: jsonSchema(PauseRequest),
        ResumeRequest: jsonSchema(ResumeRequest),
        SandboxNetwork: sandboxNetwork(),
        // The history's shapes, from the schemas the store's records and events are typed by.
        SandboxRecord: jsonSchema(SandboxRecord),
        LifecycleEvent: jsonSchema(LifecycleEvent),
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
            query(
              "phase",
              "starting | running | stopping | failed | paused (paused ones are listed only when asked for, one page)",
            ),
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
      "/sandboxes/{id}/pause": {
        post: {
          summary:
            "Pause a running sandbox: its files are kept (not its memory or processes) and its pod goes back to the pool; it keeps its id, metadata and the lifetime it has left",
          parameters: [id],
          requestBody: { required: false, ...json({ $ref: "#/components/schemas/PauseRequest" }) },
          responses: {
            "200": { description: "paused (phase paused)", ...json(sandbox) },
            ...errors(400, 401, 404, 409, 500, 504),
          },
        },
      },
      "/sandboxes/{id}/resume": {
        post: {
          summary: "Resume a paused sandbox on an idle pod of its pool, with its files and the same id",
          parameters: [id],
          requestBody: { required: false, ...json({ $ref: "#/components/schemas/ResumeRequest" }) },
          responses: {
            "200": { description: "the sandbox, running", ...json(sandbox) },
            ...errors(400, 401, 404, 409, 500, 503),
          },
        },
      },
      ...surfacePaths(),
      "/history": {
        get: {
          summary: "Finished sandboxes",
          parameters: ["namespace", "pool", "team", "user", "from", "to", "after"]
            .map((n) => query(n, n))
            .concat(query("limit", "1..1000", int)),
          responses: {
            "200": {
              description: "a page of records, newest first",
              ...json({
                type: "object",
                required: ["records"],
                properties: {
                  records: { type: "array", items: { $ref: "#/components/schemas/SandboxRecord" } },
                  next: { type: "string", description: "`after` of the next page; absent on the last" },
                },
              }),
            },
            ...errors(400, 401, 503),
          },
        },
      },
      "/history/{id}": {
        get: {
          summary:
            "One sandbox's history: its terminal record once it ended, and its lifecycle events (each pause and resume) oldest first",
          parameters: [id],
          responses: {
            "200": {
              description: "the sandbox's record (absent while it has not ended) and events",
              ...json({
                type: "object",
                required: ["sandboxId", "events"],
                properties: {
                  sandboxId: str,
                  record: { $ref: "#/components/schemas/SandboxRecord" },
                  events: { type: "array", items: { $ref: "#/components/schemas/LifecycleEvent" } },
                },
              }),
            },
            ...errors(400, 401, 404, 503),
          },
        },
      },
    },
  };
}
