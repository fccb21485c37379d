import type { Send } from "./support.ts";

/**
 * timedBurst sends n concurrent creates to a pool and times each answer: the 201s (the pool's
 * worth, served by the time the last one came) and the 503s (how fast the rest were told no).
 */
export async function timedBurst(api: Send, pool: string, n: number) {
  const t0 = performance.now();
  const answers = await Promise.all(
    Array.from({ length: n }, async () => {
      const res = await api("POST", "/v1/sandboxes", JSON.stringify({ pool }));
      return { status: res.status, ms: performance.now() - t0 };
    }),
  );
  const odd = answers.filter((a) => a.status !== 201 && a.status !== 503);
  if (odd.length > 0)
    throw new Error(`${pool}: ${odd.length} answers neither 201 nor 503 (${odd[0]?.status})`);
  const served = answers.filter((a) => a.status === 201).map((a) => a.ms);
  const refused = answers.filter((a) => a.status === 503).map((a) => a.ms);
  const lastServedMs = Math.max(0, ...served);
  return {
    creates: n,
    served,
    refused,
    lastServedMs,
    servedPerSecond: served.length / (lastServedMs / 1000),
  };
}
