import { describe, expect, it } from "vitest";
import { KubeError } from "../../lib/kube/errors.ts";
import type { WatchEvent } from "../../lib/kube/transport.ts";
import { watchLines } from "../../lib/kube/watch-lines.ts";

const line = (type: string, name: string) => `${JSON.stringify({ type, object: { metadata: { name } } })}\n`;
const names = (events: WatchEvent[]) =>
  events.map((e) => `${e.type} ${(e.object as { metadata: { name: string } }).metadata.name}`);

describe("watchLines", () => {
  it("hands over each event once its line is complete, however the chunks cut it", () => {
    const seen: WatchEvent[] = [];
    const feed = watchLines("watch pods", (e) => {
      seen.push(e);
      return false;
    });
    const text = line("ADDED", "a") + line("MODIFIED", "a") + line("DELETED", "b");
    const cuts = [0, 5, 17, 40];
    for (let i = 1; i < cuts.length; i++) feed(text.slice(cuts[i - 1], cuts[i]));
    expect(names(seen)).toEqual([]);
    expect(feed(text.slice(40))).toBe(false);
    expect(names(seen)).toEqual(["ADDED a", "MODIFIED a", "DELETED b"]);
  });

  it("stops at the event the callback stops on, and drops the rest", () => {
    const seen: WatchEvent[] = [];
    const feed = watchLines("watch pods", (e) => {
      seen.push(e);
      return seen.length === 2;
    });
    expect(feed(line("ADDED", "a") + line("ADDED", "b") + line("ADDED", "c"))).toBe(true);
    expect(feed(line("ADDED", "d"))).toBe(true);
    expect(names(seen)).toEqual(["ADDED a", "ADDED b"]);
  });

  it("skips blank lines and throws a KubeError naming the watch for a line that is not JSON", () => {
    const seen: WatchEvent[] = [];
    const feed = watchLines("watch pods in ns", (e) => {
      seen.push(e);
      return false;
    });
    feed(`\n  \n${line("ADDED", "a")}`);
    expect(names(seen)).toEqual(["ADDED a"]);
    let thrown: unknown;
    try {
      feed("<html>bad gateway</html>\n");
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(KubeError);
    expect((thrown as KubeError).reason).toBe("InvalidResponse");
    expect((thrown as KubeError).message).toContain(
      "watch pods in ns: a watch event that is not JSON: <html>",
    );
  });

  it("lets the callback's own throw through to the transport, which ends the watch with it", () => {
    const feed = watchLines("watch pods", () => {
      throw new Error("callback failed");
    });
    expect(() => feed(line("ADDED", "a"))).toThrow("callback failed");
  });

  it("parses a line the apiserver wrote only when its object is read, with meta from its start", () => {
    const seen: WatchEvent[] = [];
    const feed = watchLines("watch pods", (e) => {
      seen.push(e);
      return false;
    });
    const object = {
      kind: "Pod",
      apiVersion: "v1",
      metadata: { name: "a", namespace: "ns", uid: "u", resourceVersion: "7" },
    };
    feed(`${JSON.stringify({ type: "MODIFIED", object })}\n`);
    expect(seen[0]?.meta).toEqual({ name: "a", namespace: "ns", resourceVersion: "7" });
    expect(seen[0]?.object).toEqual(object);
    expect(seen[0]?.object).toBe(seen[0]?.object);
  });

  it("a peeked line that is not JSON throws the KubeError when its object is read", () => {
    const seen: WatchEvent[] = [];
    const feed = watchLines("watch pods in ns", (e) => {
      seen.push(e);
      return false;
    });
    const broken =
      '{"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"7",,}}\n';
    expect(feed(broken)).toBe(false);
    expect(seen[0]?.meta?.name).toBe("a");
    let thrown: unknown;
    try {
      void seen[0]?.object;
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(KubeError);
    expect((thrown as KubeError).message).toContain("watch pods in ns: a watch event that is not JSON");
  });
});
