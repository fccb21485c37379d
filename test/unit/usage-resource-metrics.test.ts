import { describe, expect, it } from "vitest";
import { parseResourceMetrics } from "../../lib/usage/resource-metrics.ts";

// The kubelet's /metrics/resource text, as kubelet 1.36 writes it (the figures stamped with their
// stats' time, the start time not) and as kwok's simulation writes it (infra/kwok/resource-usage.yaml: no stamps,
// start time 0 for a pod that does not run), and what a broken line costs: that line only.

const AT = "2026-12-02T06:00:00.000Z";

const KUBELET = `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="sandbox",namespace="team-a",pod="p-1"} 12.5 1764655190123
container_cpu_usage_seconds_total{container="sidecar",namespace="team-a",pod="p-1"} 0.25 1764655190456
# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes
# TYPE container_memory_working_set_bytes gauge
container_memory_working_set_bytes{container="sandbox",namespace="team-a",pod="p-1"} 4.194304e+07 1764655190123
container_memory_working_set_bytes{container="sidecar",namespace="team-a",pod="p-1"} 1.048576e+06 1764655190456
# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds
# TYPE container_start_time_seconds gauge
container_start_time_seconds{container="sandbox",namespace="team-a",pod="p-1"} 1.7646551e+09
container_start_time_seconds{container="sidecar",namespace="team-a",pod="p-1"} 1.764655e+09
# HELP container_swap_usage_bytes [ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems
# TYPE container_swap_usage_bytes gauge
container_swap_usage_bytes{container="sandbox",namespace="team-a",pod="p-1"} 0 1764655190130
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 3810.5 1764655190000
# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="team-a",pod="p-1"} 4.3e+07 1764655190123
# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise
# TYPE resource_scrape_error gauge
resource_scrape_error 0
`;

describe("parseResourceMetrics", () => {
  it("reads the kubelet's text: each container's CPU, memory and start, at its stats' time", () => {
    expect(parseResourceMetrics(KUBELET, AT)).toEqual([
      {
        namespace: "team-a",
        pod: "p-1",
        container: "sandbox",
        at: new Date(1764655190123).toISOString(),
        cpuCoreSeconds: 12.5,
        memoryWorkingSetBytes: 41943040,
        startTime: new Date(1764655100000).toISOString(),
      },
      {
        namespace: "team-a",
        pod: "p-1",
        container: "sidecar",
        at: new Date(1764655190456).toISOString(),
        cpuCoreSeconds: 0.25,
        memoryWorkingSetBytes: 1048576,
        startTime: new Date(1764655000000).toISOString(),
      },
    ]);
  });

  it("reads kwok's text: no timestamps (the read's time), a pod that does not run left out", () => {
    const kwok = [
      'container_cpu_usage_seconds_total{container="main",namespace="ns",pod="run"} 7.5',
      'container_cpu_usage_seconds_total{container="main",namespace="ns",pod="pending"} 0',
      'container_memory_working_set_bytes{container="main",namespace="ns",pod="run"} 5.0331648e+07',
      'container_memory_working_set_bytes{container="main",namespace="ns",pod="pending"} 0',
      'container_start_time_seconds{container="main",namespace="ns",pod="run"} 1.7646551e+09',
      'container_start_time_seconds{container="main",namespace="ns",pod="pending"} 0',
    ].join("\n");
    expect(parseResourceMetrics(kwok, AT)).toEqual([
      {
        namespace: "ns",
        pod: "run",
        container: "main",
        at: AT,
        cpuCoreSeconds: 7.5,
        memoryWorkingSetBytes: 50331648,
        startTime: new Date(1764655100000).toISOString(),
      },
    ]);
  });

  it("takes labels in any order, escaped values, blanks, CRLF endings and a trailing comma", () => {
    const text =
      '  container_memory_working_set_bytes { pod = "a\\"b" , namespace="n\\\\s",container="c\\nd", } \t 10 \r\n' +
      'container_cpu_usage_seconds_total{container="c\\nd",namespace="n\\\\s",pod="a\\"b",extra="x"}2e0\r\n';
    expect(parseResourceMetrics(text, AT)).toEqual([
      {
        namespace: "n\\s",
        pod: 'a"b',
        container: "c\nd",
        at: AT,
        memoryWorkingSetBytes: 10,
        cpuCoreSeconds: 2,
      },
    ]);
  });

  it("skips each malformed line alone, and keeps the good ones around it", () => {
    const good = (metric: string, v: string) => `${metric}{container="c",namespace="n",pod="p"} ${v}`;
    const bad = [
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod="p"',
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod="p} 1',
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod=p} 1',
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod="p\\t"} 1',
      'container_cpu_usage_seconds_total{container="c",container="d",namespace="n",pod="p"} 1',
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod="p"}',
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod="p"} one',
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod="p"} 0x10',
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod="p"} 1 2 3',
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod="p"} 1 1.5',
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod="p"} 1 99999999999999999',
      'container_cpu_usage_seconds_total{container="c",namespace="n",9pod="p"} 1',
      "container_cpu_usage_seconds_total-1",
      "{} 1",
      "9metric 1",
      "\u0000\u0001 garbage",
    ];
    const text = [
      good("container_memory_working_set_bytes", "100"),
      ...bad,
      good("container_start_time_seconds", "1764655100"),
    ].join("\n");
    expect(parseResourceMetrics(text, AT)).toEqual([
      {
        namespace: "n",
        pod: "p",
        container: "c",
        at: AT,
        memoryWorkingSetBytes: 100,
        startTime: new Date(1764655100000).toISOString(),
      },
    ]);
  });

  it("leaves a figure out when it is NaN, infinite or negative, never a zero in its place", () => {
    const text = [
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod="p"} NaN',
      'container_memory_working_set_bytes{container="c",namespace="n",pod="p"} +Inf',
      'container_start_time_seconds{container="c",namespace="n",pod="p"} 1e300',
      'container_cpu_usage_seconds_total{container="d",namespace="n",pod="p"} -1',
      'container_memory_working_set_bytes{container="d",namespace="n",pod="p"} -Inf',
    ].join("\n");
    expect(parseResourceMetrics(text, AT)).toEqual([
      { namespace: "n", pod: "p", container: "c", at: AT },
      { namespace: "n", pod: "p", container: "d", at: AT },
    ]);
  });

  it("needs the container, namespace and pod labels; of a repeated figure the later counts", () => {
    const text = [
      'container_cpu_usage_seconds_total{container="",namespace="n",pod="p"} 1',
      'container_cpu_usage_seconds_total{namespace="n",pod="p"} 1',
      'container_cpu_usage_seconds_total{container="c",pod="p"} 1',
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod="p"} 1 1764655190000',
      'container_cpu_usage_seconds_total{container="c",namespace="n",pod="p"} 3 1764655200000',
    ].join("\n");
    expect(parseResourceMetrics(text, AT)).toEqual([
      {
        namespace: "n",
        pod: "p",
        container: "c",
        at: new Date(1764655200000).toISOString(),
        cpuCoreSeconds: 3,
      },
    ]);
  });

  it("tells containers of the same name apart by namespace and pod", () => {
    const text = [
      'container_cpu_usage_seconds_total{container="c",namespace="a",pod="p"} 1',
      'container_cpu_usage_seconds_total{container="c",namespace="b",pod="p"} 2',
      'container_cpu_usage_seconds_total{container="c",namespace="a",pod="q"} 3',
    ].join("\n");
    expect(parseResourceMetrics(text, AT).map((u) => [u.namespace, u.pod, u.cpuCoreSeconds])).toEqual([
      ["a", "p", 1],
      ["b", "p", 2],
      ["a", "q", 3],
    ]);
  });

  it("reads nothing from an empty text, comments only, or an error page", () => {
    expect(parseResourceMetrics("", AT)).toEqual([]);
    expect(parseResourceMetrics("# EOF\n# HELP x y\n", AT)).toEqual([]);
    expect(parseResourceMetrics("<html><body>502 Bad Gateway</body></html>", AT)).toEqual([]);
  });
});
