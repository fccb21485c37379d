import { parseActivityReport } from "../lib/claims/activity.ts";

/**
 * PullActivity reads a pulled activity source: sandbox id → when it was last active. It rejects
 * whenever the answer cannot be trusted (unreachable, timed out, non-2xx, invalid body), so a
 * caller can never mistake a broken source for one that saw no activity.
 */
export type PullActivity = () => Promise<ReadonlyMap<string, Date>>;

/** ActivitySourceConfig says where the pulled source is and how long to wait for it. */
export interface ActivitySourceConfig {
  /** url answers GET with `{"sandboxes":[{"id","lastActive"}]}` (a proxy's stats endpoint). */
  url: string;
  /** token, when set, is sent as `Authorization: Bearer <token>` (and never logged). */
  token?: string;
  timeoutMs: number;
}

/** ACTIVITY_REUSE_MS: pool runs within this long of a pull share its answer (see sharePulls). */
export const ACTIVITY_REUSE_MS = 1000;

/** DEFAULT_ACTIVITY_TIMEOUT_MS bounds one pull, body included: a slow source must not hold a run. */
export const DEFAULT_ACTIVITY_TIMEOUT_MS = 3000;

/**
 * httpActivitySource pulls the source with the global fetch (so it runs in Node and workerd
 * alike). Redirects are not followed (they fail the pull), so the token only goes to the
 * configured URL. Error messages name what went wrong, never the token or the URL.
 */
export function httpActivitySource(
  config: ActivitySourceConfig,
  fetchFn: typeof fetch = (input, init) => fetch(input, init),
): PullActivity {
  return async () => {
    const headers: Record<string, string> = { accept: "application/json" };
    if (config.token) headers.authorization = `Bearer ${config.token}`;
    const signal = AbortSignal.timeout(config.timeoutMs);
    const failed = (e: unknown) =>
      new Error(
        signal.aborted
          ? `activity source did not answer within ${config.timeoutMs} ms`
          : `activity source unreachable: ${reason(e)}`,
      );
    const res = await fetchFn(config.url, { method: "GET", headers, signal, redirect: "manual" }).catch(
      (e: unknown) => Promise.reject(failed(e)),
    );
    if (res.status < 200 || res.status > 299) {
      await res.body?.cancel().catch(() => {});
      throw new Error(`activity source answered HTTP ${res.status}`);
    }
    const text = await res.text().catch((e: unknown) => Promise.reject(failed(e)));
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new Error("activity source answered a body that is not JSON");
    }
    const report = parseActivityReport(body);
    if (!report.ok) throw new Error(`activity source: ${report.error}`);
    return report.value;
  };
}

/** reason is a fetch failure's cause code (ECONNREFUSED, ENOTFOUND, …), else its message. */
function reason(e: unknown): string {
  const cause = e instanceof Error ? (e.cause as { code?: unknown } | undefined) : undefined;
  if (typeof cause?.code === "string") return cause.code;
  return e instanceof Error ? e.message : String(e);
}

/**
 * sharePulls lets many pool runs share pulls: callers while a pull is in flight get its result,
 * and a successful answer is reused for reuseMs after the pull started, so a tick over many pools
 * costs the source about one request. Failures are never reused: the next caller pulls again.
 */
export function sharePulls(pull: PullActivity, reuseMs: number, now: () => number = Date.now): PullActivity {
  let inFlight: Promise<ReadonlyMap<string, Date>> | undefined;
  let last: { at: number; value: ReadonlyMap<string, Date> } | undefined;
  return () => {
    if (last && now() - last.at < reuseMs) return Promise.resolve(last.value);
    if (!inFlight) {
      const started = now();
      inFlight = pull()
        .then((value) => {
          last = { at: started, value };
          return value;
        })
        .finally(() => {
          inFlight = undefined;
        });
    }
    return inFlight;
  };
}

/**
 * mergePulls pulls every source at once and answers each sandbox's latest time among them. It
 * rejects when any source fails: a sandbox one source saw is active whatever the others say, so a
 * partial answer could make it look idle.
 */
export function mergePulls(pulls: readonly PullActivity[]): PullActivity {
  if (pulls.length === 1 && pulls[0]) return pulls[0];
  return async () => {
    const answers = await Promise.all(pulls.map((pull) => pull()));
    const merged = new Map<string, Date>();
    for (const answer of answers)
      for (const [id, at] of answer) {
        const had = merged.get(id);
        if (!had || at.getTime() > had.getTime()) merged.set(id, at);
      }
    return merged;
  };
}
