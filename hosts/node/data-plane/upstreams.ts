// What the router keeps per sandbox while it has a route: a keep-alive Agent of its own (never one
// per pod IP: a pod IP serves the next sandbox after a release, and a kept-alive connection must
// not carry one sandbox's requests to another's envd) and its envd and traffic tokens, derived
// once from the sealing key. Both go with the route (drop), so a released sandbox's idle and open connections
// are closed at once.
import { Agent } from "node:http";
import type { Duplex } from "node:stream";
import { envdAccessToken, type SealKeys, trafficAccessToken } from "../../../lib/claims/sealing.ts";

/** AGENT_IDLE_MS: a kept-alive upstream connection unused this long is closed. */
const AGENT_IDLE_MS = 60_000;

/** Upstream is one sandbox's connection pool, tokens and upgraded (websocket) connections. */
interface Upstream {
  agent: Agent;
  token?: Promise<string>;
  /** tokenIncarnation is the incarnation `token` was derived for (a resume changes the token). */
  tokenIncarnation?: number;
  traffic?: Promise<string>;
  upgraded: Set<Duplex>;
}

/** Upstreams holds each routed sandbox's Agent and envd token. */
export class Upstreams {
  private readonly bySandbox = new Map<string, Upstream>();

  private readonly keys: SealKeys | undefined;

  constructor(keys: SealKeys | undefined) {
    this.keys = keys;
  }

  private upstream(sandboxId: string): Upstream {
    let u = this.bySandbox.get(sandboxId);
    if (!u) {
      u = {
        agent: new Agent({ keepAlive: true, timeout: AGENT_IDLE_MS, scheduling: "lifo" }),
        upgraded: new Set(),
      };
      this.bySandbox.set(sandboxId, u);
    }
    return u;
  }

  /** agentFor is the sandbox's keep-alive Agent (made on first use). */
  agentFor(sandboxId: string): Agent {
    return this.upstream(sandboxId).agent;
  }

  /**
   * tokenFor is the sandbox's envd token for its incarnation (its resumes); undefined without a
   * sealing key (envd unreachable).
   */
  async tokenFor(sandboxId: string, incarnation = 0): Promise<string | undefined> {
    if (!this.keys) return undefined;
    const u = this.upstream(sandboxId);
    if (u.token === undefined || u.tokenIncarnation !== incarnation) {
      u.token = envdAccessToken(this.keys, sandboxId, incarnation);
      u.tokenIncarnation = incarnation;
    }
    return u.token;
  }

  /** trafficTokenFor is the sandbox's traffic token (a private sandbox's other ports); undefined without a sealing key. */
  async trafficTokenFor(sandboxId: string): Promise<string | undefined> {
    if (!this.keys) return undefined;
    const u = this.upstream(sandboxId);
    u.traffic ??= trafficAccessToken(this.keys, sandboxId);
    return u.traffic;
  }

  /**
   * hold ties an upgraded connection to the sandbox, so drop closes it; false when the sandbox has
   * no upstream any more (its route went while the upgrade was under way).
   */
  hold(sandboxId: string, socket: Duplex): boolean {
    const u = this.bySandbox.get(sandboxId);
    if (!u) return false;
    u.upgraded.add(socket);
    socket.once("close", () => u.upgraded.delete(socket));
    return true;
  }

  /** drop closes a sandbox's connections, idle, in use and upgraded (its route went). */
  drop(sandboxId: string): void {
    const u = this.bySandbox.get(sandboxId);
    u?.agent.destroy();
    for (const socket of u?.upgraded ?? []) socket.destroy();
    this.bySandbox.delete(sandboxId);
  }

  /** size is the number of sandboxes with an Agent. */
  get size(): number {
    return this.bySandbox.size;
  }

  close(): void {
    for (const id of [...this.bySandbox.keys()]) this.drop(id);
  }
}
