// What the router saw of each sandbox's traffic: every proxied request and upgraded connection is
// an Exchange from its arrival until it closes (both ways), so a sandbox is active while one is
// open (a commands.run that streams for an hour) and was last active when the last one moved. This
// is the host's activity source for idle release (seen) and what the activity writer persists in
// the last-active annotation; the same observations feed the router's metrics.
import type { Metrics, PortClass } from "../../../lib/metrics/metrics.ts";

/** Exchange is one proxied request or upgraded connection, observed until end (idempotent). */
export interface Exchange {
  /** responded: the response head left (status 101 for an upgrade). */
  responded(status: number): void;
  /**
   * bytesIn counts body bytes toward the sandbox, bytesOut from it. They run for every chunk of a
   * download, so they only add: the metric takes them in FLUSH_BYTES steps and at end (an open
   * exchange is activity already; see seen).
   */
  bytesIn(n: number): void;
  bytesOut(n: number): void;
  /** failed: the sandbox did not answer, or its answer was cut short (counted once). */
  failed(): void;
  end(): void;
}

/** Presence is one sandbox's open exchanges and last activity (ms since the epoch). */
interface Presence {
  open: number;
  lastAt: number;
}

/** FLUSH_BYTES: an exchange's bytes reach the bytes metric at least this often, and at its end. */
export const FLUSH_BYTES = 1024 * 1024;

/** statusClass is a status's class label ("2xx" …). */
const statusClass = (status: number) => `${Math.floor(status / 100)}xx`;

/** Traffic keeps each routed sandbox's presence and observes exchanges into the metrics. */
export class Traffic {
  private readonly bySandbox = new Map<string, Presence>();
  private readonly metrics: Metrics["dataPlane"] | undefined;
  private readonly now: () => number;

  /** onMoved hears the bytes every exchange moved, as they reach the metric (young-collections.ts). */
  private readonly onMoved: ((n: number) => void) | undefined;

  constructor(metrics: Metrics | undefined, now: () => number = Date.now, onMoved?: (n: number) => void) {
    this.metrics = metrics?.dataPlane;
    this.now = now;
    this.onMoved = onMoved;
  }

  /**
   * begin opens an exchange of `sandboxId` on a port of `portClass`: the sandbox is active now,
   * unless `active` is false (an unauthenticated envd /health: anyone may probe, and a prober must
   * not keep a sandbox from its idle release). Such an exchange is observed in the metrics only.
   */
  begin(sandboxId: string, portClass: Exclude<PortClass, "none">, active = true): Exchange {
    const started = this.now();
    let p: Presence | undefined;
    if (active) {
      p = this.bySandbox.get(sandboxId);
      if (!p) {
        p = { open: 0, lastAt: started };
        this.bySandbox.set(sandboxId, p);
      }
      p.open++;
      p.lastAt = started;
    }
    const m = this.metrics;
    m?.openStreams.inc({ port_class: portClass });
    let status = 0;
    let ended = false;
    let failed = false;
    let bytesIn = 0;
    let bytesOut = 0;
    const flush = () => {
      if (bytesIn > 0) m?.bytes.inc({ port_class: portClass, direction: "in" }, bytesIn);
      if (bytesOut > 0) m?.bytes.inc({ port_class: portClass, direction: "out" }, bytesOut);
      this.onMoved?.(bytesIn + bytesOut);
      bytesIn = 0;
      bytesOut = 0;
    };
    return {
      responded: (s) => {
        status = s;
        m?.latency.observe({ port_class: portClass }, (this.now() - started) / 1000);
      },
      bytesIn: (n) => {
        bytesIn += n;
        if (bytesIn >= FLUSH_BYTES) flush();
      },
      bytesOut: (n) => {
        bytesOut += n;
        if (bytesOut >= FLUSH_BYTES) flush();
      },
      failed: () => {
        if (failed || ended) return;
        failed = true;
        m?.upstreamErrors.inc({ port_class: portClass });
        if (!status) status = 502;
      },
      end: () => {
        if (ended) return;
        ended = true;
        flush();
        if (p) {
          p.open--;
          p.lastAt = this.now();
        }
        m?.openStreams.dec({ port_class: portClass });
        m?.requests.inc({ port_class: portClass, code: status ? statusClass(status) : "none" });
      },
    };
  }

  /** refused counts a request answered by the router itself (bad host, token, unknown sandbox). */
  refused(status: number): void {
    this.metrics?.requests.inc({ port_class: "none", code: statusClass(status) });
  }

  /** seen is each sandbox's last activity: now for one with an exchange open. */
  seen(): Map<string, Date> {
    const now = this.now();
    const seen = new Map<string, Date>();
    for (const [id, p] of this.bySandbox) seen.set(id, new Date(p.open > 0 ? now : p.lastAt));
    return seen;
  }

  /** openFor is how many exchanges of a sandbox are open (tests). */
  openFor(sandboxId: string): number {
    return this.bySandbox.get(sandboxId)?.open ?? 0;
  }

  /** forget lets go of a sandbox whose route went (its exchanges end with their connections). */
  forget(sandboxId: string): void {
    this.bySandbox.delete(sandboxId);
  }
}
