// Reading a Prometheus text exposition back: the tests check what a host serves, the benchmarks
// what a host counted during a run.
/** Sample is one line of a Prometheus text exposition: a series and its value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Samples are a scrape: its samples, and every metric family it declares (# TYPE lines). */
export interface Samples {
  samples: Sample[];
  families: Set<string>;
}

/**
 * parseExposition reads the Prometheus text format as the host writes it (prom-client): `# TYPE`
 * lines name the families, every other non-comment line is `name{labels} value`. Label values
 * are unescaped (\\, \" and \n).
 */
export function parseExposition(text: string): Samples {
  const samples: Sample[] = [];
  const families = new Set<string>();
  for (const line of text.split("\n")) {
    const type = /^# TYPE (\S+) /.exec(line);
    if (type?.[1]) families.add(type[1]);
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m?.[1] || m[3] === undefined) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] ?? ""] = (l[2] ?? "").replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return { samples, families };
}

/**
 * sampleOf sums the samples of `name` whose labels include `labels` (all of a counter's series
 * when none are given); undefined when no series matches.
 */
export function sampleOf(s: Samples, name: string, labels: Record<string, string> = {}): number | undefined {
  const matching = s.samples.filter(
    (x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v),
  );
  return matching.length ? matching.reduce((a, x) => a + x.value, 0) : undefined;
}
