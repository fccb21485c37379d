// An E2B list call fills its answer from apiserver pages, dropping what the apiserver cannot
// filter (metadata, template, starting sandboxes E2B does not show). Sparse matches would make a
// call read page after page; every call is bounded instead, in sandboxes kept and pages read.

/** PageBounds bound one list call: at most maxItems kept, at most maxPages apiserver pages read. */
export interface PageBounds {
  maxItems: number;
  maxPages: number;
}

/** Page is one apiserver page as the caller kept it: the items it keeps, the token of the next. */
export interface Page<T> {
  items: T[];
  next?: string;
}

/**
 * collectPages reads pages from `first` (a caller's token, or undefined for the start) through
 * `read`, which is asked for at most `want` more items, until no page follows, maxItems are kept
 * or maxPages were read. It answers the items (at most maxItems) and the token of the first page
 * not read, if any. `read`'s errors (a refused token among them) reject the call as they are.
 */
export async function collectPages<T>(
  read: (token: string | undefined, want: number) => Promise<Page<T>>,
  first: string | undefined,
  bounds: PageBounds,
): Promise<Page<T>> {
  const items: T[] = [];
  let next = first;
  for (let pages = 0; pages < bounds.maxPages && items.length < bounds.maxItems; pages++) {
    const page = await read(next, bounds.maxItems - items.length);
    items.push(...page.items);
    next = page.next;
    if (!next) break;
  }
  return { items: items.slice(0, bounds.maxItems), ...(next ? { next } : {}) };
}

/** PAUSED_TOKEN_PREFIX marks a list token that points into the paused sandboxes, not at a pod page. */
const PAUSED_TOKEN_PREFIX = "paused:";

/**
 * pausedOffset reads a list token: the offset into the paused sandboxes when it is one of
 * pausedPage's, undefined for an apiserver continue token (or none), or an error for a garbled
 * paused token.
 */
export function pausedOffset(token: string | undefined): number | undefined | { error: string } {
  if (!token?.startsWith(PAUSED_TOKEN_PREFIX)) return undefined;
  const rest = token.slice(PAUSED_TOKEN_PREFIX.length);
  return /^\d{1,9}$/.test(rest) ? Number(rest) : { error: "is not a token this list gave" };
}

/**
 * pausedPage is the first part of an E2B list that shows paused sandboxes: they come first
 * (`items`, every one the filters kept, in a stable order), then the running ones from their
 * apiserver pages. From `offset` it takes at most `limit`; when more are left, `next` is the
 * token of the rest and the page is full; otherwise `room` is how many running sandboxes the
 * same page may still take (from the first pod page). `more`: running sandboxes follow, so a page
 * the paused ones fill exactly still has a next token (it starts the running ones).
 */
export function pausedPage<T>(
  items: readonly T[],
  offset: number,
  limit: number,
  more = false,
): { items: T[]; next?: string; room: number } {
  const taken = items.slice(offset, offset + limit);
  const end = offset + taken.length;
  if (end < items.length || (more && taken.length === limit))
    return { items: taken, next: `${PAUSED_TOKEN_PREFIX}${end}`, room: 0 };
  return { items: taken, room: limit - taken.length };
}
