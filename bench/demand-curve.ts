/** rateIntegral is how many requests a piecewise-linear rate curve asks for by time t (seconds). */
export function rateIntegral(curve: readonly [number, number][], t: number): number {
  let total = 0;
  for (let i = 1; i < curve.length; i++) {
    const [t0, r0] = curve[i - 1] as [number, number];
    const [t1, r1] = curve[i] as [number, number];
    if (t <= t0) break;
    const end = Math.min(t, t1);
    const rEnd = r0 + ((r1 - r0) * (end - t0)) / (t1 - t0);
    total += ((r0 + rEnd) / 2) * (end - t0);
  }
  return total;
}

/**
 * demandCurve starts `send` open loop: at every moment the number of sends started is what the
 * curve asks for so far (rateIntegral), however long the answers take. It returns once the curve
 * ends, with a promise of every send settled (each send handles its own outcome).
 */
export async function demandCurve(
  curve: readonly [number, number][],
  send: (at: number) => Promise<void>,
): Promise<{ settled: Promise<unknown> }> {
  const start = performance.now();
  const end = curve[curve.length - 1]?.[0] ?? 0;
  const sends: Promise<unknown>[] = [];
  let started = 0;
  for (;;) {
    const t = (performance.now() - start) / 1000;
    const due = Math.floor(rateIntegral(curve, Math.min(t, end)));
    for (; started < due; started++) sends.push(send(performance.now()));
    if (t >= end) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  return { settled: Promise.allSettled(sends) };
}
