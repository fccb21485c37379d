import type { FaultCluster } from "./fault-cluster.ts";

/** Answer is one request's outcome: its HTTP status, or 0 when no answer came (refused, reset). */
export interface Answer {
  op: "create" | "release";
  status: number;
  at: number;
  ms: number;
  /** host is the base URL asked; undefined: the cluster's host port. */
  host?: string;
  /** retryOf is the failed first try this answer retried (on another host). */
  retryOf?: Answer;
}

/**
 * Churn is N clients creating and releasing sandboxes of one pool through the host's API until
 * stopped, as an agent fleet would: each create waits (`waitTimeout`) and carries a lifetime, so a
 * sandbox whose answer was lost (the host died mid-request) still ends; each sandbox handed out
 * (201, or 504 or 503 ShuttingDown with its sandbox) is released, retried through outages until
 * the host says released (204) or gone (404). Given `hosts` (base URLs), the clients spread their
 * requests over them, each client starting at another host and moving on by one per request, and
 * a request that failed (no answer, or a 5xx without a sandbox) is sent once more, to the next
 * host, as a client of several replicas would.
 */
export class Churn {
  /** answers are every try, retries included. */
  readonly answers: Answer[] = [];
  /** outcomes are each request's last try: its retry when it had one. */
  readonly outcomes: Answer[] = [];
  /** underway are the tries sent and not answered yet (status 0 until they are). */
  readonly underway = new Set<Answer>();
  /** handedOut are the sandboxes callers learned of, by id. */
  readonly handedOut = new Set<string>();
  private stopping = false;
  private failure: unknown;
  private readonly clients: Promise<void>[];

  private readonly c: FaultCluster;
  private readonly pool: string;
  private readonly lifetimeSeconds: number;

  private readonly hosts: (string | undefined)[];

  constructor(c: FaultCluster, pool: string, clients: number, lifetimeSeconds = 30, hosts: string[] = []) {
    this.c = c;
    this.pool = pool;
    this.lifetimeSeconds = lifetimeSeconds;
    this.hosts = hosts.length > 0 ? hosts : [undefined];
    // A client's failure is kept at once (never an unobserved rejection) and thrown by stop().
    this.clients = Array.from({ length: clients }, (_, i) =>
      this.client(i).catch((e: unknown) => {
        this.failure ??= e;
        this.stopping = true;
      }),
    );
  }

  /** since is the answers from index `from` on. */
  since(from: number): Answer[] {
    return this.answers.slice(from);
  }

  /** stop ends the churn once each client's current sandbox is released. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.clients);
    if (this.failure) throw this.failure;
  }

  /**
   * send sends one request to the `n`-th host (of `hosts`, round), and once more to the next host
   * when it failed: no answer, or a 5xx that hands out no sandbox.
   */
  private async send(n: number, op: Answer["op"], method: string, path: string, body?: unknown) {
    const once = async (host: string | undefined, retryOf?: Answer) => {
      const answer: Answer = {
        op,
        status: 0,
        at: Date.now(),
        ms: 0,
        ...(host ? { host } : {}),
        ...(retryOf ? { retryOf } : {}),
      };
      this.underway.add(answer);
      const res = await this.c.api(method, path, body, 20_000, host).catch(() => ({ status: 0, body: "" }));
      this.underway.delete(answer);
      answer.status = res.status;
      answer.ms = Date.now() - answer.at;
      this.answers.push(answer);
      return { res, answer };
    };
    const hosts = this.hosts;
    let tried = await once(hosts[n % hosts.length]);
    const failed = tried.res.status === 0 || (tried.res.status >= 500 && !sandboxIdOf(tried.res));
    if (failed && hosts.length > 1) tried = await once(hosts[(n + 1) % hosts.length], tried.answer);
    this.outcomes.push(tried.answer);
    return tried.res;
  }

  private async client(i: number): Promise<void> {
    let n = i;
    while (!this.stopping) {
      const created = await this.send(n++, "create", "POST", "/sandboxes", {
        pool: this.pool,
        wait: true,
        waitTimeout: 3,
        timeout: this.lifetimeSeconds,
      });
      const id = sandboxIdOf(created);
      if (!id) {
        await pause(200);
        continue;
      }
      this.handedOut.add(id);
      await pause(100);
      const deadline = Date.now() + 60_000;
      for (;;) {
        const res = await this.send(n++, "release", "DELETE", `/sandboxes/${id}`);
        if (res.status === 204 || res.status === 404) break;
        if (Date.now() > deadline)
          throw new Error(`sandbox ${id} not released within 60 s (last ${res.status})`);
        await pause(250);
      }
    }
  }
}

/**
 * sandboxIdOf is the sandbox a create's answer hands out: a 201's, or the one a 504 (it did not
 * run in time) or a 503 ShuttingDown (its host stopped before it ran) names.
 */
function sandboxIdOf(res: { status: number; body: string }): string | undefined {
  if (res.status !== 201 && res.status !== 503 && res.status !== 504) return undefined;
  type Body = { sandboxId?: string; error?: { sandbox?: { sandboxId?: string } } };
  // A 503 need not be the API's JSON (a host going away mid-answer): it then hands out nothing.
  const body: Body = res.status === 503 ? (tryJson<Body>(res.body) ?? {}) : (JSON.parse(res.body) as Body);
  return res.status === 201 ? body.sandboxId : body.error?.sandbox?.sandboxId;
}

/** tryJson parses text as JSON, or answers undefined. */
function tryJson<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
