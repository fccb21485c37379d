import { describe, expect, it } from "vitest";
import { parseWith } from "../../lib/crd/parse-with.ts";
import type { LogEntry, LogLevel } from "../../lib/logs/log-entry.ts";
import { e2bLogsV1, LOGS_WINDOW_MS, logPage, pageWindow } from "../../lib/logs/log-page.ts";
import {
  E2bLogsV1Query,
  E2bLogsV2Query,
  NativeLogsQuery,
  v1Page,
  v2Page,
} from "../../lib/logs/log-queries.ts";

// Paging as E2B pages sandbox logs (spec/openapi.yml and its LogQueryWindow): a cursor in Unix
// ms, inclusive bounds, a 7-day window, newest first by default, a minimum level, a substring.

const NOW = Date.parse("2026-12-02T07:00:00Z");
const T0 = Date.parse("2026-12-02T06:00:00Z");

/** entry is a line at T0 + `s` seconds. */
function entry(s: number, message: string, level: LogLevel = "info", ns = 0): LogEntry {
  const ms = T0 + s * 1000;
  return {
    ms,
    ns,
    timestamp: new Date(ms).toISOString(),
    level,
    message,
    line: message,
    fields: { source: "container" },
  };
}

const ALL = [
  entry(3, "c warn", "warn"),
  entry(1, "a debug", "debug"),
  entry(2, "b info"),
  entry(2, "b twin", "info", 5),
  entry(4, "d error", "error"),
];
const messages = (es: LogEntry[]) => es.map((e) => e.message);

describe("logPage", () => {
  it("is newest first backward, oldest first forward, at most `limit`", () => {
    expect(messages(logPage(ALL, { direction: "backward", limit: 3 }, NOW))).toEqual([
      "d error",
      "c warn",
      "b twin",
    ]);
    expect(messages(logPage(ALL, { direction: "forward", limit: 2 }, NOW))).toEqual(["a debug", "b info"]);
    expect(logPage(ALL, { direction: "forward", limit: 0 }, NOW)).toEqual([]);
  });

  it("pages on with an inclusive cursor in ms, both ways", () => {
    const c = T0 + 2000;
    expect(messages(logPage(ALL, { direction: "forward", cursor: c, limit: 10 }, NOW))).toEqual([
      "b info",
      "b twin",
      "c warn",
      "d error",
    ]);
    expect(messages(logPage(ALL, { direction: "backward", cursor: c, limit: 10 }, NOW))).toEqual([
      "b twin",
      "b info",
      "a debug",
    ]);
    expect(logPage(ALL, { direction: "forward", cursor: T0 + 4001, limit: 10 }, NOW)).toEqual([]);
  });

  it("keeps the level and above, and messages containing the search text (case-sensitive)", () => {
    expect(messages(logPage(ALL, { direction: "forward", limit: 10, level: "warn" }, NOW))).toEqual([
      "c warn",
      "d error",
    ]);
    expect(messages(logPage(ALL, { direction: "forward", limit: 10, search: "b " }, NOW))).toEqual([
      "b info",
      "b twin",
    ]);
    expect(logPage(ALL, { direction: "forward", limit: 10, search: "B " }, NOW)).toEqual([]);
  });

  it("reaches 7 days back from now or the cursor, as E2B's window does", () => {
    expect(pageWindow({ direction: "backward" }, NOW)).toEqual([NOW - LOGS_WINDOW_MS, NOW]);
    expect(pageWindow({ direction: "forward", cursor: T0 }, NOW)).toEqual([T0, T0 + LOGS_WINDOW_MS]);
    expect(pageWindow({ direction: "backward", cursor: T0 }, NOW)).toEqual([NOW - LOGS_WINDOW_MS, T0]);
    expect(pageWindow({ direction: "forward", cursor: 0 }, NOW)).toEqual([
      NOW - LOGS_WINDOW_MS,
      NOW - LOGS_WINDOW_MS,
    ]);
    const old = entry(-8 * 24 * 3600, "eight days ago");
    expect(logPage([old, ...ALL], { direction: "forward", limit: 1 }, NOW)).toEqual([ALL[1]]);
    // Without a cursor the window's end is not applied: a node clock ahead must not hide lines.
    const ahead = { ...entry(0, "ahead"), ms: NOW + 2000 };
    expect(messages(logPage([ahead], { direction: "backward", limit: 1 }, NOW))).toEqual(["ahead"]);
  });

  it("shapes E2B's v1 answer: the lines and the same entries structured", () => {
    const page = logPage(ALL, { direction: "forward", limit: 1 }, NOW);
    expect(e2bLogsV1(page)).toEqual({
      logs: [{ timestamp: "2026-12-02T06:00:01.000Z", line: "a debug" }],
      logEntries: [
        {
          timestamp: "2026-12-02T06:00:01.000Z",
          level: "debug",
          message: "a debug",
          fields: { source: "container" },
        },
      ],
    });
  });
});

describe("the queries", () => {
  it("default as E2B's spec does: v1 forward 1000, v2 backward 1000", () => {
    const v1 = parseWith(E2bLogsV1Query, {});
    expect(v1.ok && v1Page(v1.value)).toEqual({ direction: "forward", limit: 1000 });
    const big = parseWith(E2bLogsV1Query, { start: "5", limit: "5000" });
    expect(big.ok && v1Page(big.value)).toEqual({ direction: "forward", limit: 1000, cursor: 5 });
    const v2 = parseWith(E2bLogsV2Query, { level: "warn", search: "x", cursor: "1764655200000" });
    expect(v2.ok && v2Page(v2.value)).toEqual({
      direction: "backward",
      limit: 1000,
      level: "warn",
      search: "x",
      cursor: 1764655200000,
    });
    const native = parseWith(NativeLogsQuery, { follow: "true" });
    expect(native.ok && native.value).toMatchObject({ follow: "true", idleTimeout: 60 });
  });

  it("name the bad field", () => {
    const cases: [typeof E2bLogsV2Query | typeof NativeLogsQuery, Record<string, string>, string][] = [
      [E2bLogsV2Query, { limit: "1001" }, "limit"],
      [E2bLogsV2Query, { limit: "-1" }, "limit"],
      [E2bLogsV2Query, { cursor: "soon" }, "cursor"],
      [E2bLogsV2Query, { direction: "sideways" }, "direction"],
      [E2bLogsV2Query, { level: "fatal" }, "level"],
      [E2bLogsV2Query, { search: "x".repeat(257) }, "search"],
      [NativeLogsQuery, { follow: "yes" }, "follow"],
      [NativeLogsQuery, { idleTimeout: "0" }, "idleTimeout"],
    ];
    for (const [schema, query, field] of cases) {
      const parsed = parseWith(schema, query);
      expect(parsed.ok ? [] : parsed.issues.map((i) => i.path), JSON.stringify(query)).toEqual([field]);
    }
  });
});
