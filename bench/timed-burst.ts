import type { Send } from "./support.ts";

/**
 * timedBurst sends n concurrent creates to a pool and times each answer: the 201s (the pool's
 * worth, served by the time the last one came) and the 503s (how fast the rest were told no),
 * with the sandboxes created and what each 503 said. `extra` joins each create's body (e.g. wait).
 * With perSecond, create i starts i/perSecond seconds after the first instead of all at once.
 */
export async function timedBurst(
  api: Send,
  pool: string,
  n: number,
  extra: Record<string, unknown> = {},
  perSecond = 0,
) {
  const t0 = performance.now();
  const answers = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      if (perSecond > 0) await new Promise((r) => setTimeout(r, (i * 1000) / perSecond));
      const res = await api("POST", "/v1/sandboxes", JSON.stringify({ pool, ...extra }));
      const id = res.status === 201 ? (JSON.parse(res.body) as { sandboxId: string }).sandboxId : undefined;
      return { status: res.status, ms: performance.now() - t0, id, body: res.body };
    }),
  );
  const odd = answers.filter((a) => a.status !== 201 && a.status !== 503);
  if (odd.length > 0)
    throw new Error(`${pool}: ${odd.length} answers neither 201 nor 503 (${odd[0]?.status})`);
  const served = answers.filter((a) => a.status === 201).map((a) => a.ms);
  const refused = answers.filter((a) => a.status === 503).map((a) => a.ms);
  const sandboxIds = answers.flatMap((a) => (a.id ? [a.id] : []));
  const refusals = answers.filter((a) => a.status === 503).map((a) => a.body.slice(0, 200));
  const lastServedMs = Math.max(0, ...served);
  return {
    creates: n,
    served,
    refused,
    lastServedMs,
    servedPerSecond: served.length / (lastServedMs / 1000),
    sandboxIds,
    refusals,
  };
}
