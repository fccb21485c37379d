import type { FaultCluster } from "./fault-cluster.ts";

/** Answer is one request's outcome: its HTTP status, or 0 when no answer came (refused, reset). */
export interface Answer {
  op: "create" | "release";
  status: number;
  at: number;
  ms: number;
}

/**
 * Churn is N clients creating and releasing sandboxes of one pool through the host's API until
 * stopped, as an agent fleet would: each create waits (`waitTimeout`) and carries a lifetime, so a
 * sandbox whose answer was lost (the host died mid-request) still ends; each sandbox handed out
 * (201, or 504 with its sandbox) is released, retried through outages until the host says
 * released (204) or gone (404).
 */
export class Churn {
  readonly answers: Answer[] = [];
  /** handedOut are the sandboxes callers learned of, by id. */
  readonly handedOut = new Set<string>();
  private stopping = false;
  private failure: unknown;
  private readonly clients: Promise<void>[];

  private readonly c: FaultCluster;
  private readonly pool: string;
  private readonly lifetimeSeconds: number;

  constructor(c: FaultCluster, pool: string, clients: number, lifetimeSeconds = 30) {
    this.c = c;
    this.pool = pool;
    this.lifetimeSeconds = lifetimeSeconds;
    // A client's failure is kept at once (never an unobserved rejection) and thrown by stop().
    this.clients = Array.from({ length: clients }, () =>
      this.client().catch((e: unknown) => {
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

  private async send(op: Answer["op"], method: string, path: string, body?: unknown) {
    const at = Date.now();
    const res = await this.c.api(method, path, body, 20_000).catch(() => ({ status: 0, body: "" }));
    this.answers.push({ op, status: res.status, at, ms: Date.now() - at });
    return res;
  }

  private async client(): Promise<void> {
    while (!this.stopping) {
      const created = await this.send("create", "POST", "/sandboxes", {
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
        const res = await this.send("release", "DELETE", `/sandboxes/${id}`);
        if (res.status === 204 || res.status === 404) break;
        if (Date.now() > deadline)
          throw new Error(`sandbox ${id} not released within 60 s (last ${res.status})`);
        await pause(250);
      }
    }
  }
}

/** sandboxIdOf is the sandbox a create's answer hands out: a 201's, or a 504's (it did not run in time). */
function sandboxIdOf(res: { status: number; body: string }): string | undefined {
  if (res.status !== 201 && res.status !== 504) return undefined;
  const body = JSON.parse(res.body) as { sandboxId?: string; error?: { sandbox?: { sandboxId?: string } } };
  return res.status === 201 ? body.sandboxId : body.error?.sandbox?.sandboxId;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
