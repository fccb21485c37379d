import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { FLUSH_BYTES, Traffic } from "../../hosts/node/data-plane/traffic.ts";
import { createMetrics } from "../../lib/metrics/metrics.ts";

// What the router makes of each exchange: a sandbox is active NOW while any exchange of it is
// open (however long nothing moves), else as of its last byte or close; the same observations
// count requests, bytes, open streams and upstream errors by port class.

function setup() {
  const clock = { ms: Date.parse("2026-01-01T00:00:00Z") };
  const metrics = createMetrics(new Registry());
  return { clock, metrics, traffic: new Traffic(metrics, () => clock.ms) };
}
const iso = (seen: Map<string, Date>, id: string) => seen.get(id)?.toISOString();
const value = async (metrics: ReturnType<typeof createMetrics>, name: string) =>
  (await metrics.registry.getSingleMetric(name)?.get())?.values;

describe("Traffic", () => {
  it("holds a sandbox active while an exchange is open, then as of its end", () => {
    const { clock, traffic } = setup();
    const stream = traffic.begin("sbx-a", "envd");
    clock.ms += 20_000; // nothing moved for 20 s, but the stream is open
    expect(iso(traffic.seen(), "sbx-a")).toBe("2026-01-01T00:00:20.000Z");
    expect(traffic.openFor("sbx-a")).toBe(1);
    stream.end();
    stream.end(); // once only
    expect(traffic.openFor("sbx-a")).toBe(0);
    clock.ms += 7_000;
    expect(iso(traffic.seen(), "sbx-a")).toBe("2026-01-01T00:00:20.000Z");
    expect(traffic.seen().has("sbx-b")).toBe(false);
  });

  it("counts bytes as activity and forgets a sandbox whose route went", () => {
    const { clock, traffic } = setup();
    const ex = traffic.begin("sbx-a", "other");
    clock.ms += 3_000;
    ex.bytesOut(10);
    ex.end();
    expect(iso(traffic.seen(), "sbx-a")).toBe("2026-01-01T00:00:03.000Z");
    traffic.forget("sbx-a");
    expect(traffic.seen().size).toBe(0);
    // An exchange that outlived its route ends without bringing the sandbox back.
    const late = traffic.begin("sbx-b", "other");
    traffic.forget("sbx-b");
    late.end();
    expect(traffic.seen().size).toBe(0);
  });

  it("leaves a sandbox's activity alone for an inactive exchange (a bare envd /health), but counts it", async () => {
    const { clock, metrics, traffic } = setup();
    const probe = traffic.begin("sbx-a", "envd", false);
    clock.ms += 5_000;
    expect(traffic.seen().has("sbx-a")).toBe(false);
    expect(traffic.openFor("sbx-a")).toBe(0);
    probe.responded(204);
    probe.end();
    expect(traffic.seen().has("sbx-a")).toBe(false);
    // An active one while a probe is open: the probe's end does not take the open one away.
    const run = traffic.begin("sbx-a", "envd");
    const again = traffic.begin("sbx-a", "envd", false);
    again.end();
    expect(traffic.openFor("sbx-a")).toBe(1);
    run.end();
    expect(iso(traffic.seen(), "sbx-a")).toBe("2026-01-01T00:00:05.000Z");
    const requests = await value(metrics, "agentbox_dataplane_requests_total");
    expect(requests?.find((v) => v.labels.port_class === "envd" && v.labels.code === "2xx")?.value).toBe(1);
  });

  it("hands a long exchange's bytes to the metric every FLUSH_BYTES, and the rest at its end", async () => {
    const { metrics, traffic } = setup();
    const out = async () =>
      (await value(metrics, "agentbox_dataplane_bytes_total"))?.find((v) => v.labels.direction === "out")
        ?.value;
    const ex = traffic.begin("sbx-a", "envd");
    ex.bytesOut(FLUSH_BYTES - 1);
    expect(await out()).toBeUndefined();
    ex.bytesOut(2);
    expect(await out()).toBe(FLUSH_BYTES + 1);
    ex.bytesOut(5);
    ex.end();
    expect(await out()).toBe(FLUSH_BYTES + 6);
  });

  it("observes requests, bytes, open streams, upstream errors and time to the response head", async () => {
    const { clock, metrics, traffic } = setup();
    const ok = traffic.begin("sbx-a", "envd");
    const cut = traffic.begin("sbx-a", "other");
    expect(await value(metrics, "agentbox_dataplane_open_streams")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ labels: { port_class: "envd" }, value: 1 }),
        expect.objectContaining({ labels: { port_class: "other" }, value: 1 }),
      ]),
    );
    clock.ms += 4;
    ok.responded(200);
    ok.bytesIn(5);
    ok.bytesOut(7);
    ok.end();
    cut.failed();
    cut.failed();
    cut.end();
    traffic.refused(401);
    expect(await value(metrics, "agentbox_dataplane_requests_total")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ labels: { port_class: "envd", code: "2xx" }, value: 1 }),
        expect.objectContaining({ labels: { port_class: "other", code: "5xx" }, value: 1 }),
        expect.objectContaining({ labels: { port_class: "none", code: "4xx" }, value: 1 }),
      ]),
    );
    expect(await value(metrics, "agentbox_dataplane_upstream_errors_total")).toEqual([
      expect.objectContaining({ labels: { port_class: "other" }, value: 1 }),
    ]);
    expect(await value(metrics, "agentbox_dataplane_bytes_total")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ labels: { port_class: "envd", direction: "in" }, value: 5 }),
        expect.objectContaining({ labels: { port_class: "envd", direction: "out" }, value: 7 }),
      ]),
    );
    const open = await value(metrics, "agentbox_dataplane_open_streams");
    expect(open?.every((v) => v.value === 0)).toBe(true);
    const head = await value(metrics, "agentbox_dataplane_response_head_seconds");
    expect(head).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          metricName: "agentbox_dataplane_response_head_seconds_bucket",
          labels: { port_class: "envd", le: 0.005 },
          value: 1,
        }),
        expect.objectContaining({
          metricName: "agentbox_dataplane_response_head_seconds_bucket",
          labels: { port_class: "envd", le: 0.0025 },
          value: 0,
        }),
      ]),
    );
  });
});
