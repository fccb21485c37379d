// The queries of the logs endpoints, as E2B's OpenAPI document gives them (spec/openapi.yml:
// `/sandboxes/{id}/logs`, `/v2/sandboxes/{id}/logs`), and the native one, which adds follow.
import * as v from "valibot";
import { LOG_LEVELS } from "./log-entry.ts";
import type { PageQuery } from "./log-page.ts";

/** MAX_LOG_PAGE is the most entries a page holds (E2B's v2 maximum, and its default). */
export const MAX_LOG_PAGE = 1000;

/** QueryWhole is a whole number in a query string, from min to max. */
const QueryWhole = (min: number, max: number, what: string) =>
  v.pipe(
    v.string(),
    v.regex(/^\d{1,16}$/, `must be ${what}, a whole number from ${min} to ${max}`),
    v.transform(Number),
    v.minValue(min, `must be at least ${min}`),
    v.maxValue(max, `must be at most ${max}`),
  );

const Millis = QueryWhole(0, Number.MAX_SAFE_INTEGER, "a Unix time in milliseconds");
const Direction = v.picklist(["forward", "backward"], "must be forward or backward");
const Level = v.picklist(LOG_LEVELS, `must be one of ${LOG_LEVELS.join(", ")}`);
const Search = v.pipe(v.string(), v.maxLength(256, "must be at most 256 characters"));

/**
 * E2bLogsV1Query is `GET /sandboxes/{id}/logs`: `start` (ms) and `limit` (default 1000; E2B sets
 * no maximum, so more is accepted and a page still holds at most MAX_LOG_PAGE).
 */
export const E2bLogsV1Query = v.object({
  start: v.optional(Millis),
  limit: v.optional(QueryWhole(0, 2 ** 31 - 1, "a count"), String(MAX_LOG_PAGE)),
});

/** E2bLogsV2Query is `GET /v2/sandboxes/{id}/logs`: cursor (ms), limit 0..1000, direction, level, search. */
export const E2bLogsV2Query = v.object({
  cursor: v.optional(Millis),
  limit: v.optional(QueryWhole(0, MAX_LOG_PAGE, "a count"), String(MAX_LOG_PAGE)),
  direction: v.optional(Direction, "backward"),
  level: v.optional(Level),
  search: v.optional(Search),
});

/** FOLLOW_IDLE_SECONDS is how long a followed log may stay silent before its stream ends (default). */
export const FOLLOW_IDLE_SECONDS = 60;

/**
 * NativeLogsQuery is `GET /v1/sandboxes/{id}/logs`: v2's query, plus `follow` (stream new lines
 * after the page) and `idleTimeout` (seconds without a new line before a follow ends, 1..3600).
 */
export const NativeLogsQuery = v.object({
  ...E2bLogsV2Query.entries,
  follow: v.optional(v.picklist(["true", "false"], "must be true or false"), "false"),
  idleTimeout: v.optional(QueryWhole(1, 3600, "seconds"), String(FOLLOW_IDLE_SECONDS)),
});
export type NativeLogsQuery = v.InferOutput<typeof NativeLogsQuery>;

/** v1Page is the page a v1 query asks for: forward from `start`, at most MAX_LOG_PAGE. */
export function v1Page(q: v.InferOutput<typeof E2bLogsV1Query>): PageQuery {
  return {
    direction: "forward",
    limit: Math.min(q.limit, MAX_LOG_PAGE),
    ...(q.start !== undefined ? { cursor: q.start } : {}),
  };
}

/** v2Page is the page a v2 (or native) query asks for. */
export function v2Page(q: v.InferOutput<typeof E2bLogsV2Query>): PageQuery {
  return {
    direction: q.direction,
    limit: q.limit,
    ...(q.cursor !== undefined ? { cursor: q.cursor } : {}),
    ...(q.level ? { level: q.level } : {}),
    ...(q.search ? { search: q.search } : {}),
  };
}
