import { describe, expect, it } from "vitest";
import { collectPages, type Page } from "../../lib/e2b/list-pages.ts";

// The paging rule of E2B's lists, on a scripted sequence of apiserver pages.

/** pages scripts a list: page i keeps `kept[i]` items and names page i+1 while there is one. */
function pages(kept: number[]) {
  const asked: { token: string | undefined; want: number }[] = [];
  const read = async (token: string | undefined, want: number): Promise<Page<string>> => {
    asked.push({ token, want });
    const i = token === undefined ? 0 : Number(token.slice(1));
    const items = Array.from({ length: Math.min(kept[i] ?? 0, want) }, (_, j) => `p${i}-${j}`);
    return { items, ...(i + 1 < kept.length ? { next: `t${i + 1}` } : {}) };
  };
  return { read, asked };
}

describe("collectPages", () => {
  it("reads on until the list ends, asking each page for what is still wanted", async () => {
    const { read, asked } = pages([2, 0, 3]);
    const got = await collectPages(read, undefined, { maxItems: 10, maxPages: 10 });
    expect(got).toEqual({ items: ["p0-0", "p0-1", "p2-0", "p2-1", "p2-2"] });
    expect(asked).toEqual([
      { token: undefined, want: 10 },
      { token: "t1", want: 8 },
      { token: "t2", want: 8 },
    ]);
  });

  it("stops at maxItems and hands back the token of the next page", async () => {
    const { read } = pages([3, 3, 3]);
    expect(await collectPages(read, undefined, { maxItems: 4, maxPages: 10 })).toEqual({
      items: ["p0-0", "p0-1", "p0-2", "p1-0"],
      next: "t2",
    });
  });

  it("reads at most maxPages pages however sparse the matches (the deprecated list's cap)", async () => {
    // A thousand pages that keep nothing: the call still reads only four of them.
    const { read, asked } = pages(Array.from({ length: 1000 }, () => 0));
    expect(await collectPages(read, undefined, { maxItems: 1000, maxPages: 4 })).toEqual({
      items: [],
      next: "t4",
    });
    expect(asked).toHaveLength(4);
  });

  it("starts from the caller's token, and lets the read's errors through", async () => {
    const { read, asked } = pages([1, 1, 1]);
    expect(await collectPages(read, "t1", { maxItems: 5, maxPages: 5 })).toEqual({ items: ["p1-0", "p2-0"] });
    expect(asked[0]?.token).toBe("t1");
    const refused = new Error("refused");
    await expect(
      collectPages(() => Promise.reject(refused), "bad", { maxItems: 5, maxPages: 5 }),
    ).rejects.toBe(refused);
  });
});
