import { KubeError } from "./errors.ts";
import { peekWatchEvent } from "./peek-watch-event.ts";
import type { WatchEvent, WatchEventMeta } from "./transport.ts";

/**
 * watchLines splits a watch stream (newline-delimited JSON events, in chunks cut anywhere) into
 * events for onEvent, and is what both hosts' watch transports feed their chunks to. The function
 * it returns takes the next chunk and answers true once onEvent asked to stop (the rest is
 * dropped). An event whose line starts as the apiserver writes one (peekWatchEvent) comes with
 * its `meta` and its object parsed only when first read; any other line is parsed at once. A line
 * that is not JSON throws a KubeError naming the watch (at once, or when its object is read), and
 * so does onEvent's own throw pass through: the transport rejects its watch with it rather than
 * letting it escape a stream's event handler, where it would take the process down.
 */
export function watchLines(
  what: string,
  onEvent: (event: WatchEvent) => boolean,
): (chunk: string) => boolean {
  let buffered = "";
  let stopped = false;
  return (chunk) => {
    if (stopped) return true;
    buffered += chunk;
    for (let newline = buffered.indexOf("\n"); newline >= 0; newline = buffered.indexOf("\n")) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (!line) continue;
      const peeked = peekWatchEvent(line);
      const event = peeked
        ? new LazyWatchEvent(peeked.type, peeked.meta, line, what)
        : (parseLine(line, what) as WatchEvent);
      if (onEvent(event)) {
        stopped = true;
        buffered = "";
        return true;
      }
    }
    return false;
  };
}

/** parseLine parses one watch line, or throws a KubeError naming the watch. */
function parseLine(line: string, what: string): unknown {
  try {
    return JSON.parse(line);
  } catch {
    throw new KubeError(
      502,
      "InvalidResponse",
      `${what}: a watch event that is not JSON: ${line.slice(0, 200)}`,
    );
  }
}

/** LazyWatchEvent keeps its line until its object is first read, then the parsed event's object. */
class LazyWatchEvent implements WatchEvent {
  readonly type: WatchEvent["type"];
  readonly meta: WatchEventMeta;
  private line: string | undefined;
  private readonly what: string;
  private parsed: unknown;

  constructor(type: WatchEvent["type"], meta: WatchEventMeta, line: string, what: string) {
    this.type = type;
    this.meta = meta;
    this.line = line;
    this.what = what;
  }

  get object(): unknown {
    if (this.line !== undefined) {
      this.parsed = (parseLine(this.line, this.what) as { object?: unknown }).object;
      this.line = undefined;
    }
    return this.parsed;
  }
}
