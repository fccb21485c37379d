/**
 * KubeError is an API server error with the parts steps branch on: the HTTP status and the
 * Status reason (Conflict, AlreadyExists, NotFound, Invalid, …). Both hosts' transports map
 * responses to it, so functions never see transport-specific errors.
 */
export class KubeError extends Error {
  readonly status: number;
  readonly reason: string;
  /** causes are the field-level details of an Invalid error (empty when the server gave none). */
  readonly causes: readonly { field?: string; message?: string }[];

  constructor(
    status: number,
    reason: string,
    message: string,
    causes: readonly { field?: string; message?: string }[] = [],
  ) {
    super(message);
    this.name = "KubeError";
    this.status = status;
    this.reason = reason;
    this.causes = causes;
  }
}

/**
 * ApiServerUnreachable is a request that never got an answer (network error, timeout): the host
 * answers 503 and a tick fails loudly, rather than either looking like an empty cluster.
 */
export class ApiServerUnreachable extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ApiServerUnreachable";
  }
}

/**
 * isApiServerTrouble: the apiserver could not serve the call (unreachable, timed out, overloaded
 * with a 429, failing with a 5xx, or answering what is not JSON); callers get a 503 to retry,
 * not a 500 that blames the request.
 */
export const isApiServerTrouble = (e: unknown): boolean =>
  e instanceof ApiServerUnreachable || (e instanceof KubeError && (e.status === 429 || e.status >= 500));

/** kubeErrorFrom builds a KubeError from a non-2xx response body (a metav1.Status, usually). */
export function kubeErrorFrom(status: number, body: string, what: string): KubeError {
  let reason =
    status === 404 ? "NotFound" : status === 409 ? "Conflict" : status === 422 ? "Invalid" : "Unknown";
  let message = body.slice(0, 500);
  let causes: { field?: string; message?: string }[] = [];
  try {
    const parsed = JSON.parse(body) as {
      reason?: string;
      message?: string;
      details?: { causes?: typeof causes };
    };
    if (parsed.reason) reason = parsed.reason;
    if (parsed.message) message = parsed.message;
    causes = parsed.details?.causes ?? [];
  } catch {
    // not JSON: keep the raw text
  }
  return new KubeError(status, reason, `${what}: ${status} ${reason}: ${message}`, causes);
}

/** isNotFound: the object is gone (or never was). */
export const isNotFound = (e: unknown): boolean => e instanceof KubeError && e.status === 404;
/** isAlreadyExists: a create lost the race for a deterministic name. */
export const isAlreadyExists = (e: unknown): boolean =>
  e instanceof KubeError && e.reason === "AlreadyExists";
/**
 * isConflict: an optimistic-concurrency precondition failed, so someone else changed the object
 * first. That is a 409 (stale resourceVersion, delete preconditions), or the 422 the apiserver
 * gives a JSON Patch that no longer applies: a failed `test` and a `remove` of a path that is gone
 * both answer "Invalid" with the generic message and no field causes (a real validation error
 * names its fields). Our patches are planned from a snapshot, so either means the snapshot is stale.
 */
export const isConflict = (e: unknown): boolean =>
  e instanceof KubeError &&
  ((e.status === 409 && e.reason !== "AlreadyExists") ||
    (e.status === 422 &&
      e.causes.length === 0 &&
      /rejected our request due to an error in our request/.test(e.message)));

/**
 * isContinueRejected: the apiserver refused a list's `continue` token, as garbled (400 BadRequest,
 * "continue key is not valid") or expired (410 Expired: the list changed too much since; list
 * again from the start). Only a list given a token can get either; the caller's token is at fault.
 */
export const isContinueRejected = (e: unknown): e is KubeError =>
  e instanceof KubeError && (e.status === 400 || e.status === 410);

/** orMissing turns a read's NotFound into undefined; every other error still rejects. */
export function orMissing<T>(read: Promise<T>): Promise<T | undefined> {
  return read.catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)));
}
