import { KubeError } from "./errors.ts";
import type { WatchEvent } from "./transport.ts";

/**
 * watchLines splits a watch stream (newline-delimited JSON events, in chunks cut anywhere) into
 * events for onEvent, and is what both hosts' watch transports feed their chunks to. The function
 * it returns takes the next chunk and answers true once onEvent asked to stop (the rest is
 * dropped). A line that is not JSON throws a KubeError naming the watch, and so does onEvent's
 * own throw pass through: the transport rejects its watch with it rather than letting it escape
 * a stream's event handler, where it would take the process down.
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
      let event: WatchEvent;
      try {
        event = JSON.parse(line) as WatchEvent;
      } catch {
        throw new KubeError(
          502,
          "InvalidResponse",
          `${what}: a watch event that is not JSON: ${line.slice(0, 200)}`,
        );
      }
      if (onEvent(event)) {
        stopped = true;
        buffered = "";
        return true;
      }
    }
    return false;
  };
}
