import { describe, expect, it } from "vitest";
import { peekWatchEvent } from "../../lib/kube/peek-watch-event.ts";

// Lines as the apiserver writes them (Go's encoder: the fields in declaration order).
const line = (type: string, metadata: string) =>
  `{"type":"${type}","object":{"kind":"Pod","apiVersion":"v1","metadata":{${metadata},"creationTimestamp":"2026-11-26T10:00:00Z","labels":{"a":"b"}},"spec":{}}}`;

describe("peekWatchEvent", () => {
  it("reads the type, name, namespace and resourceVersion from the line's start", () => {
    expect(
      peekWatchEvent(line("MODIFIED", '"name":"p-1","namespace":"ns","uid":"u-1","resourceVersion":"4711"')),
    ).toEqual({ type: "MODIFIED", meta: { name: "p-1", namespace: "ns", resourceVersion: "4711" } });
  });

  it("reads past a generateName and a selfLink", () => {
    const l = line(
      "DELETED",
      '"name":"p-x7","generateName":"p-","namespace":"ns","selfLink":"/api/v1/x","uid":"u","resourceVersion":"9"',
    );
    expect(peekWatchEvent(l)?.meta).toEqual({ name: "p-x7", namespace: "ns", resourceVersion: "9" });
    expect(peekWatchEvent(l)?.type).toBe("DELETED");
  });

  it("leaves anything else to a full parse: bookmarks, errors, other field orders, escapes", () => {
    const bookmark =
      '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12"}}}';
    const error = '{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"code":410}}';
    for (const l of [
      bookmark,
      error,
      line("ADDED", '"namespace":"ns","name":"p","uid":"u","resourceVersion":"1"'),
      line("ADDED", '"name":"p\\"q","namespace":"ns","uid":"u","resourceVersion":"1"'),
      ` ${line("ADDED", '"name":"p","namespace":"ns","uid":"u","resourceVersion":"1"')}`,
    ])
      expect(peekWatchEvent(l)).toBeUndefined();
  });

  it("a cluster-scoped object (no namespace) is parsed whole", () => {
    expect(peekWatchEvent(line("ADDED", '"name":"node-1","uid":"u","resourceVersion":"3"'))).toBeUndefined();
  });
});
