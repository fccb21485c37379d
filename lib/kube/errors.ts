/**
 * KubeError is an API server error with the parts steps branch on: the HTTP status and the
 * Status reason (Conflict, AlreadyExists, NotFound, Invalid, …). Both hosts' transports map
 * responses to it, so functions never see transport-specific errors.
 */
export class KubeError extends Error {
  readonly status: number;
  readonly reason: string;

  constructor(status: number, reason: string, message: string) {
    super(message);
    this.name = "KubeError";
    this.status = status;
    this.reason = reason;
  }
}

/** kubeErrorFrom builds a KubeError from a non-2xx response body (a metav1.Status, usually). */
export function kubeErrorFrom(status: number, body: string, what: string): KubeError {
  let reason =
    status === 404 ? "NotFound" : status === 409 ? "Conflict" : status === 422 ? "Invalid" : "Unknown";
  let message = body.slice(0, 500);
  try {
    const parsed = JSON.parse(body) as { reason?: string; message?: string };
    if (parsed.reason) reason = parsed.reason;
    if (parsed.message) message = parsed.message;
  } catch {
    // not JSON: keep the raw text
  }
  return new KubeError(status, reason, `${what}: ${status} ${reason}: ${message}`);
}

/** isNotFound: the object is gone (or never was). */
export const isNotFound = (e: unknown): boolean => e instanceof KubeError && e.status === 404;
/** isAlreadyExists: a create lost the race for a deterministic name. */
export const isAlreadyExists = (e: unknown): boolean =>
  e instanceof KubeError && e.reason === "AlreadyExists";
/**
 * isConflict: an optimistic-concurrency precondition failed (stale resourceVersion, or a JSON
 * Patch `test` that no longer holds), so someone else changed the object first.
 */
export const isConflict = (e: unknown): boolean =>
  e instanceof KubeError &&
  ((e.status === 409 && e.reason !== "AlreadyExists") ||
    (e.status === 422 && /test operation|testing value|precondition/i.test(e.message)));
