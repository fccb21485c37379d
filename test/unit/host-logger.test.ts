import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { hostLogger } from "../../hosts/node/logger.ts";

/** sink collects what a logger writes, posing as a terminal or not. */
function sink(isTTY: boolean) {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  }) as unknown as NodeJS.WriteStream;
  Object.assign(stream, { isTTY });
  return { stream, text: () => chunks.join("") };
}

describe("hostLogger", () => {
  it("writes JSON lines when nobody watches", () => {
    const s = sink(false);
    hostLogger("info", s.stream).info({ pool: "ns/p" }, "started");
    expect(JSON.parse(s.text())).toMatchObject({ level: 30, pool: "ns/p", msg: "started" });
  });

  it("writes readable lines on a terminal", async () => {
    const s = sink(true);
    const log = hostLogger("info", s.stream);
    log.info({ pool: "ns/p" }, "started");
    log.flush?.();
    await new Promise((r) => setTimeout(r, 50));
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the colours' escape sequences
    const plain = s.text().replace(/\x1b\[[0-9;]*m/g, "");
    expect(plain).toMatch(/INFO.*started/);
    expect(plain).toContain('pool: "ns/p"');
    expect(() => JSON.parse(plain)).toThrow();
  });
});
