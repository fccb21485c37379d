import type { WatchEvent, WatchEventMeta } from "./transport.ts";

/**
 * EVENT_PREFIX matches the start of a watch line as the apiserver writes it (Go's encoder keeps
 * the fields in declaration order): the event's type, then the object's kind, apiVersion and the
 * first fields of its metadata up to its resourceVersion. Anything else (a bookmark, an error, a
 * line written in another order) does not match and is parsed whole.
 */
const EVENT_PREFIX =
  /^\{"type":"(ADDED|MODIFIED|DELETED)","object":\{"kind":"[A-Za-z]+","apiVersion":"[^"\\]*","metadata":\{"name":"([^"\\]+)",(?:"generateName":"[^"\\]*",)?"namespace":"([^"\\]+)",(?:"selfLink":"[^"\\]*",)?"uid":"[^"\\]*","resourceVersion":"([^"\\]+)"/;

/**
 * peekWatchEvent reads a watch line's type and its object's name, namespace and resourceVersion
 * from the line's first bytes, without parsing the rest, or answers undefined when the line does
 * not start as the apiserver writes a namespaced object's event. A view that only needs to know
 * which object left (a claimed pod leaving the idle feed) or keeps the last version of each
 * object until it is read (the tick's view) then never parses the events it does not read: each
 * host decodes every pool pod event, so this is most of what an extra host costs (issue #25).
 */
export function peekWatchEvent(line: string): { type: WatchEvent["type"]; meta: WatchEventMeta } | undefined {
  const m = EVENT_PREFIX.exec(line);
  if (!m) return undefined;
  return {
    type: m[1] as WatchEvent["type"],
    meta: { name: m[2] as string, namespace: m[3] as string, resourceVersion: m[4] as string },
  };
}
