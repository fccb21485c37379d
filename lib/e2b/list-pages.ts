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
