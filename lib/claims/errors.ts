// Every /v1 error has the same JSON body, so clients branch on `error.code` and show
// `error.message`, and a bad request names each offending field. The constructors pair each
// code with its HTTP status, so a route cannot send a NotFound body with a 400.
import type { ApiIssue } from "../crd/parse-with.ts";

/** ApiErrorBody is the body of every error response of the /v1 API. */
export interface ApiErrorBody {
  error: {
    /** code is machine-readable: BadRequest, NotFound, Unavailable, Unauthorized, Conflict, ... */
    code: string;
    message: string;
    /** fields lists the invalid fields of a BadRequest, with Kubernetes-style paths. */
    fields?: { path: string; message: string }[];
    /** choices lists what the caller could have named instead, e.g. the visible templates. */
    choices?: string[];
    /** sandbox is the sandbox as it stands, when the error is about one (e.g. a start that timed out). */
    sandbox?: unknown;
  };
}

/** ApiError is a status and the body to send with it. */
export interface ApiError {
  status: 400 | 401 | 404 | 409 | 429 | 501 | 503 | 504;
  body: ApiErrorBody;
}

/** badRequest (400): the request is malformed; `fields` are the issues parseWith returned. */
export function badRequest(message: string, fields?: readonly ApiIssue[]): ApiError {
  const listed = fields?.map(({ path, message }) => ({ path, message }));
  return {
    status: 400,
    body: { error: { code: "BadRequest", message, ...(listed ? { fields: listed } : {}) } },
  };
}

/** notFound (404): the sandbox, pool or template does not exist or is not visible to the caller. */
export function notFound(message: string, choices?: readonly string[]): ApiError {
  return {
    status: 404,
    body: { error: { code: "NotFound", message, ...(choices ? { choices: [...choices] } : {}) } },
  };
}

/** unavailable (503): nothing can serve the request now (no idle pod, wait timed out); retry later. */
export function unavailable(message: string): ApiError {
  return { status: 503, body: { error: { code: "Unavailable", message } } };
}

/**
 * notConfigured (501): this host is not set up to serve the request (e.g. Envs without a cluster
 * ID). Not a 503: retrying the same host would never help, so clients must not be told to.
 */
export function notConfigured(message: string): ApiError {
  return { status: 501, body: { error: { code: "NotConfigured", message } } };
}

/**
 * unauthorized (401): no key, or an unknown one. The message never says which, so the response
 * cannot be used to probe for keys.
 */
export function unauthorized(): ApiError {
  return {
    status: 401,
    body: {
      error: {
        code: "Unauthorized",
        message: "a valid API key is required (X-API-Key or Authorization: Bearer header)",
      },
    },
  };
}

/** conflict (409): the sandbox changed state under the request (e.g. already stopping). */
export function conflict(message: string): ApiError {
  return { status: 409, body: { error: { code: "Conflict", message } } };
}

/**
 * notRunning answers a create with `wait` whose sandbox did not reach Running in time (or left
 * the start): 504 with the sandbox's current view, whose detail says why (e.g. ImagePullBackOff).
 */
export function notRunning(message: string, sandbox: unknown): ApiError {
  return { status: 504, body: { error: { code: "StartupTimeout", message, sandbox } } };
}

/**
 * shuttingDown (503) answers a create with `wait` whose host began to shut down before its
 * sandbox ran (ADR 0029): the sandbox is the caller's and goes on starting without this request
 * (any host's GET shows it run; a DELETE releases it). No Retry-After: a retried create would
 * claim a second sandbox.
 */
export function shuttingDown(message: string, sandbox: unknown): ApiError {
  return { status: 503, body: { error: { code: "ShuttingDown", message, sandbox } } };
}

/**
 * tooManySandboxes (429): the team holds as many sandboxes as its limit allows; the message names
 * the limit and the setting, and a release makes room (no Retry-After: time alone does not).
 */
export function tooManySandboxes(team: string, held: number, limit: number): ApiError {
  return {
    status: 429,
    body: {
      error: {
        code: "TooManySandboxes",
        message: `team "${team}" holds ${held} sandboxes, its limit is ${limit} (the host's team sandbox limit); release one first`,
      },
    },
  };
}
