import { describe, expect, it } from "vitest";
import { containerEntries, containerLogQuery, containerReadFor } from "../../lib/logs/container-lines.ts";
import { markAfter, newSince } from "../../lib/logs/follow-mark.ts";
import { compareLogTime, formatLogTime, parseLogTime } from "../../lib/logs/log-entry.ts";
import { readLine } from "../../lib/logs/read-line.ts";
import {
  completeLines,
  filesToRead,
  isOnVolume,
  runtimeEntries,
  runtimeReadFrom,
} from "../../lib/logs/runtime-lines.ts";

// The pure parts of the logs API: a line's level and time, the container's log since the claim
// (the kubelet's sinceTime is whole seconds and a fast-path container ran before the claim, so
// the cut is by each line's own stamp), LogDir files, and what a follow has not sent yet.

const CLAIM = "2026-12-02T06:00:05Z";
const claim = { ms: Date.parse(CLAIM), ns: 0 };
const CONTAINER = { source: "container", container: "sandbox" };

describe("parseLogTime and formatLogTime", () => {
  it("keep nanoseconds, order by them, and honour offsets", () => {
    const a = parseLogTime("2026-12-02T06:00:05.123456789Z");
    const b = parseLogTime("2026-12-02T06:00:05.123456790Z");
    expect(a).toEqual({ ms: Date.parse("2026-12-02T06:00:05.123Z"), ns: 456789 });
    expect(a && b && compareLogTime(a, b)).toBeLessThan(0);
    expect(parseLogTime("2026-12-02T08:00:05+02:00")).toEqual(claim);
    expect(a && formatLogTime(a)).toBe("2026-12-02T06:00:05.123456789Z");
    expect(formatLogTime(claim)).toBe("2026-12-02T06:00:05.000Z");
    expect(parseLogTime("yesterday")).toBeUndefined();
    expect(parseLogTime("2026-12-02 06:00:05Z")).toBeUndefined();
  });
});

describe("readLine", () => {
  it("reads a JSON line's level, message, time and scalar fields", () => {
    const facts = readLine(
      '{"level":"WARN","msg":"disk low","time":"2026-12-02T06:00:06Z","pct":93,"x":{"y":1}}',
    );
    expect(facts).toEqual({
      level: "warn",
      message: "disk low",
      fields: { pct: "93" },
      time: { ms: Date.parse("2026-12-02T06:00:06Z"), ns: 0 },
    });
    expect(readLine('{"level":50,"msg":"boom"}').level).toBe("error");
    expect(readLine('{"severity":"debug","message":"m"}')).toMatchObject({ level: "debug", message: "m" });
    expect(readLine('{"lvl":"fatal","ts":1764655206.5}')).toMatchObject({
      level: "error",
      time: { ms: 1764655206500, ns: 0 },
    });
  });

  it("reads a text line's leading time and level word, or logfmt's level", () => {
    expect(readLine("2026-12-02T06:00:06.5Z ERROR cannot bind")).toMatchObject({
      level: "error",
      message: "2026-12-02T06:00:06.5Z ERROR cannot bind",
      time: { ms: Date.parse("2026-12-02T06:00:06.500Z"), ns: 0 },
    });
    expect(readLine("[warn] slow").level).toBe("warn");
    expect(readLine("Warning: deprecated").level).toBe("warn");
    expect(readLine('ts=1 level="debug" msg=x').level).toBe("debug");
  });

  it("calls anything else info, a word that only starts like a level too", () => {
    expect(readLine("Debugging the parser")).toEqual({
      level: "info",
      message: "Debugging the parser",
      fields: {},
    });
    expect(readLine("{not json").level).toBe("info");
    expect(readLine('["level","error"]').level).toBe("info");
    expect(readLine('{"level":"loud","msg":"m"}').level).toBe("info");
  });
});

describe("containerLogQuery and containerReadFor", () => {
  it("asks from the claim or the cursor, whichever is later, in whole seconds, bounded", () => {
    expect(containerLogQuery("sandbox", claim.ms + 500, { bytes: 100 })).toEqual({
      container: "sandbox",
      timestamps: "true",
      sinceTime: CLAIM,
      limitBytes: "100",
    });
    expect(containerLogQuery("sandbox", claim.ms, { from: claim.ms - 60_000, bytes: 1 }).sinceTime).toBe(
      CLAIM,
    );
    expect(
      containerLogQuery("sandbox", claim.ms, { from: claim.ms + 2_999, tailLines: 5000, bytes: 1 }),
    ).toMatchObject({ sinceTime: "2026-12-02T06:00:07Z", tailLines: "5000" });
  });

  it("reads what the page needs: from the cursor forward, the newest `limit` lines backward", () => {
    const kib = 1024;
    expect(containerReadFor({ direction: "forward", limit: 10 })).toEqual({ bytes: 256 * kib });
    expect(containerReadFor({ direction: "forward", cursor: 7, limit: 100 })).toEqual({
      from: 7,
      bytes: 800 * kib,
    });
    expect(containerReadFor({ direction: "backward", limit: 1000 })).toEqual({
      tailLines: 1000,
      bytes: 4096 * kib,
    });
    expect(containerReadFor({ direction: "backward", limit: 0 })).toEqual({ tailLines: 1, bytes: 256 * kib });
    // A filter cannot be pushed to the kubelet: a filtered page scans the whole bound.
    expect(containerReadFor({ direction: "backward", limit: 5, search: "x" })).toEqual({
      tailLines: 5000,
      bytes: 4096 * kib,
    });
  });
});

describe("containerEntries", () => {
  const text = [
    "2026-12-02T06:00:04.999999999Z before the claim (the fast path's container, or the second sinceTime rounds to)",
    "2026-12-02T06:00:05.000000001Z first of this sandbox",
    '2026-12-02T06:00:06.25Z {"level":"error","msg":"failed","code":"E1"}',
    "not stamped",
    "2026-12-02T06:00:07Z last\r",
    "",
  ].join("\n");

  it("keeps the lines stamped at or after the claim, each with its level and source", () => {
    const entries = containerEntries(text, claim, false, CONTAINER);
    expect(entries.map((e) => e.message)).toEqual(["first of this sandbox", "failed", "last"]);
    expect(entries[0]).toMatchObject({ timestamp: "2026-12-02T06:00:05.000000001Z", level: "info", ns: 1 });
    expect(entries[1]).toMatchObject({
      level: "error",
      line: '{"level":"error","msg":"failed","code":"E1"}',
      fields: { code: "E1", source: "container", container: "sandbox" },
    });
  });

  it("drops a last line cut by limitBytes, and keeps an unfinished one otherwise", () => {
    const cut = "2026-12-02T06:00:05Z whole\n2026-12-02T06:00:06Z cut in the mid";
    expect(containerEntries(cut, claim, true, CONTAINER).map((e) => e.message)).toEqual(["whole"]);
    expect(containerEntries(cut, claim, false, CONTAINER)).toHaveLength(2);
  });

  it("never shows a line from before the claim, whatever the read returned", () => {
    const old = Array.from({ length: 50 }, (_, i) => `2026-12-02T06:00:0${i % 5}.${i}Z previous tenant ${i}`);
    expect(containerEntries(old.join("\n"), claim, false, CONTAINER)).toEqual([]);
  });
});

describe("LogDir files", () => {
  const file = { path: "/var/log/rt/a.log", size: 300, modifiedMs: claim.ms + 9000 };

  it("reads only files written since the claim, at most 16, by path", () => {
    const files = [
      { ...file, path: "/l/b" },
      { ...file, path: "/l/old", modifiedMs: claim.ms - 1 },
      { ...file, path: "/l/a" },
      ...Array.from({ length: 20 }, (_, i) => ({ ...file, path: `/l/z${String(i).padStart(2, "0")}` })),
    ];
    const picked = filesToRead(files, claim.ms).map((f) => f.path);
    expect(picked.slice(0, 3)).toEqual(["/l/a", "/l/b", "/l/z00"]);
    expect(picked).toHaveLength(16);
    expect(picked).not.toContain("/l/old");
  });

  it("stamps undated lines with the last dated one before them, else the file's time; cuts before the claim", () => {
    const text = [
      "starting",
      '{"time":"2026-12-02T06:00:01Z","msg":"before the claim"}',
      "undated after a line before the claim",
      '{"time":"2026-12-02T06:00:08Z","level":"warn","msg":"after"}',
      "undated after it",
      "",
    ].join("\n");
    const entries = runtimeEntries({ text, atLineStart: true, file, onVolume: false }, claim);
    expect(entries.map((e) => [e.message, e.timestamp, e.level])).toEqual([
      ["starting", "2026-12-02T06:00:14.000Z", "info"],
      ["after", "2026-12-02T06:00:08.000Z", "warn"],
      ["undated after it", "2026-12-02T06:00:08.000Z", "info"],
    ]);
    expect(entries[0]?.fields).toEqual({ source: "runtime", file: "/var/log/rt/a.log" });
  });

  it("on a volume (it outlives containers) keeps only lines that carry their own time", () => {
    const text = 'a tenant before\n{"time":"2026-12-02T06:00:08Z","msg":"dated"}\nundated\n';
    const entries = runtimeEntries({ text, atLineStart: true, file, onVolume: true }, claim);
    expect(entries.map((e) => e.message)).toEqual(["dated"]);
    const main = { volumeMounts: [{ name: "logs", mountPath: "/var/log/rt/" }] };
    expect(isOnVolume(main, "/var/log/rt/a.log")).toBe(true);
    expect(isOnVolume(main, "/var/log/rtx/a.log")).toBe(false);
    expect(isOnVolume({}, "/var/log/rt/a.log")).toBe(false);
  });

  it("drops the cut first line of a ranged read, and reads complete lines only", () => {
    expect(
      runtimeEntries({ text: "ut line\nwhole\n", atLineStart: false, file, onVolume: false }, claim),
    ).toHaveLength(1);
    const bytes = new TextEncoder().encode("one\ntwo\nthr");
    expect(completeLines(bytes)).toEqual({ text: "one\ntwo\n", used: 8 });
    expect(completeLines(new TextEncoder().encode("partial"))).toEqual({ text: "", used: 0 });
  });

  it("reads on from the offset, at most the newest `max` bytes, again from 0 after a truncation", () => {
    expect(runtimeReadFrom(100, undefined, 1000)).toEqual({ from: 0, atLineStart: true });
    expect(runtimeReadFrom(5000, undefined, 1000)).toEqual({ from: 4000, atLineStart: false });
    expect(runtimeReadFrom(5000, 4500, 1000)).toEqual({ from: 4500, atLineStart: true });
    expect(runtimeReadFrom(9000, 4500, 1000)).toEqual({ from: 8000, atLineStart: false });
    expect(runtimeReadFrom(10, 4500, 1000)).toEqual({ from: 0, atLineStart: true });
  });
});

describe("following", () => {
  const at = (s: string, message: string) =>
    containerEntries(`${s} ${message}\n`, claim, false, CONTAINER)[0] ?? expect.fail(message);

  it("sends each line once although reads start at a whole second and repeat lines", () => {
    const first = [at("2026-12-02T06:00:05.1Z", "a"), at("2026-12-02T06:00:05.2Z", "b")];
    let mark = markAfter({ ...claim, sameInstant: 0 }, first);
    const again = [...first, at("2026-12-02T06:00:05.3Z", "c"), at("2026-12-02T06:00:06Z", "d")];
    const fresh = newSince(again, mark);
    expect(fresh.map((e) => e.message)).toEqual(["c", "d"]);
    mark = markAfter(mark, fresh);
    expect(newSince(again, mark)).toEqual([]);
  });

  it("tells apart lines the kubelet stamped alike by how many of that instant were sent", () => {
    const twin = [at("2026-12-02T06:00:07Z", "x"), at("2026-12-02T06:00:07Z", "y")];
    const mark = markAfter({ ...claim, sameInstant: 0 }, twin.slice(0, 1));
    expect(mark.sameInstant).toBe(1);
    expect(newSince([...twin, at("2026-12-02T06:00:07Z", "z")], mark).map((e) => e.message)).toEqual([
      "y",
      "z",
    ]);
  });
});
