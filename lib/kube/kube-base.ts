// The request plumbing every API client method shares: one call per request, failures as
// KubeErrors, lists with their resourceVersion and continue token, deletes of an exact version.
import { KubeError, kubeErrorFrom } from "./errors.ts";
import type { KubeRequest, KubeTransport } from "./transport.ts";

/** Preconditions make a delete apply only to the object version a step decided on. */
export interface Preconditions {
  uid?: string;
  resourceVersion?: string;
}

/** ObjectList is a list response: the items and the list's resourceVersion. */
export interface ObjectList<T> {
  items: T[];
  resourceVersion: string;
  /** continue is the apiserver's token for the next page, when there is one. */
  continue?: string;
}

/**
 * parseBody reads a successful answer's JSON. A body that is not JSON (a proxy's page, a cut-off
 * stream) is a KubeError naming the call, never a bare SyntaxError out of a step or a handler.
 */
function parseBody<T>(status: number, body: string, what: string): T {
  if (!body) return undefined as T;
  try {
    return JSON.parse(body) as T;
  } catch {
    throw new KubeError(
      502,
      "InvalidResponse",
      `${what}: ${status} with a body that is not JSON: ${body.slice(0, 200)}`,
    );
  }
}

/**
 * KubeBase sends requests through a host's transport and counts them by method (for benchmarks
 * and the steps' own reports). No client cache: every read goes to the API server (see
 * ReadOptions for the apiserver's own).
 */
export class KubeBase {
  private readonly transport: KubeTransport;
  /** requests counts calls by method, for benchmarks and the steps' own reports. */
  readonly requests = { GET: 0, POST: 0, PUT: 0, PATCH: 0, DELETE: 0 };

  constructor(transport: KubeTransport) {
    this.transport = transport;
  }

  protected async call<T>(req: KubeRequest, what: string): Promise<T> {
    this.requests[req.method]++;
    const res = await this.transport(req);
    if (res.status < 200 || res.status >= 300) throw kubeErrorFrom(res.status, res.body, what);
    return parseBody<T>(res.status, res.body, what);
  }

  /**
   * callText sends a request whose answer is text, not JSON (a container's log): the body as it
   * came, or the same KubeError a JSON call throws for a non-2xx status.
   */
  protected async callText(req: KubeRequest, what: string): Promise<string> {
    this.requests[req.method]++;
    const res = await this.transport(req);
    if (res.status < 200 || res.status >= 300) throw kubeErrorFrom(res.status, res.body, what);
    return res.body;
  }

  /** deleteExactly deletes an object only if it still is the version decided on (DeleteOptions). */
  protected async deleteExactly(path: string, preconditions: Preconditions, what: string): Promise<void> {
    await this.call(
      { method: "DELETE", path, body: { apiVersion: "v1", kind: "DeleteOptions", preconditions } },
      what,
    );
  }

  protected async list<T>(
    path: string,
    query: Record<string, string | undefined>,
    what: string,
  ): Promise<ObjectList<T>> {
    const res = await this.call<{ items?: T[]; metadata?: { resourceVersion?: string; continue?: string } }>(
      { method: "GET", path, query, list: true },
      what,
    );
    return {
      items: res.items ?? [],
      resourceVersion: res.metadata?.resourceVersion ?? "",
      ...(res.metadata?.continue ? { continue: res.metadata.continue } : {}),
    };
  }
}
