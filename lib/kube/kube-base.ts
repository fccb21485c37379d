// The request plumbing every API client method shares: one call per request, failures as
// KubeErrors, lists with their resourceVersion and continue token, deletes of an exact version.
import { kubeErrorFrom } from "./errors.ts";
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
    return (res.body ? JSON.parse(res.body) : undefined) as T;
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
      { method: "GET", path, query },
      what,
    );
    return {
      items: res.items ?? [],
      resourceVersion: res.metadata?.resourceVersion ?? "",
      ...(res.metadata?.continue ? { continue: res.metadata.continue } : {}),
    };
  }
}
