import { describe, expect, it } from "vitest";
import { apiserverRejection, namePaths } from "../../lib/env/env-edit-rejection.ts";
import { editFromFields } from "../../lib/env/env-edit-request.ts";
import { envTimeline } from "../../lib/env/env-timeline.ts";
import { envWithMembers } from "../support/env-member.ts";

const env = envWithMembers([{ name: "a" }, { name: "b" }] as never, {
  autoscaling: { groups: [{ name: "g" }] } as never,
});

describe("apiserverRejection", () => {
  it("keeps admission's message without the request's prefix and names each field's member", () => {
    const r = apiserverRejection(env, {
      status: 422,
      message:
        'patch env ns/py: 422 Invalid: admission webhook "validate.agents.navix.sh" denied the request: SandboxEnv is invalid: spec.clusters[0].members[1].config.minReplicas: must not exceed config.maxReplicas; spec.autoscaling.groups[0].minReplicas: must not exceed maxReplicas',
      causes: [],
    });
    expect(r).toEqual({
      status: 422,
      code: "Invalid",
      message:
        'SandboxEnv is invalid: spec.clusters[0].members[1].config.minReplicas (member "b"): must not exceed config.maxReplicas; spec.autoscaling.groups[0].minReplicas (group "g"): must not exceed maxReplicas',
      fields: [
        {
          path: 'spec.clusters[0].members[1].config.minReplicas (member "b")',
          message: "must not exceed config.maxReplicas",
        },
        {
          path: 'spec.autoscaling.groups[0].minReplicas (group "g")',
          message: "must not exceed maxReplicas",
        },
      ],
    });
  });

  it("takes the schema's field causes, says a 403 is the caller's rights, and leaves conflicts alone", () => {
    expect(
      apiserverRejection(env, {
        status: 422,
        message: 'patch env ns/py: 422 Invalid: SandboxEnv.agents.navix.sh "py" is invalid: …',
        causes: [{ field: "spec.clusters[0].members[0].config.maxReplicas", message: "Invalid value: -1" }],
      })?.fields,
    ).toEqual([
      { path: 'spec.clusters[0].members[0].config.maxReplicas (member "a")', message: "Invalid value: -1" },
    ]);
    expect(
      apiserverRejection(env, { status: 403, message: "patch env ns/py: 403 Forbidden: no", causes: [] }),
    ).toMatchObject({
      status: 403,
      code: "Forbidden",
      message: expect.stringContaining("you may not change"),
    });
    expect(apiserverRejection(env, { status: 409, message: "x", causes: [] })).toBeUndefined();
    expect(apiserverRejection(env, { status: 503, message: "x", causes: [] })).toBeUndefined();
  });

  it("leaves a path alone when its index names nothing", () => {
    expect(namePaths(env, "spec.clusters[3].members[0].name")).toBe("spec.clusters[3].members[0].name");
  });
});

describe("editFromFields", () => {
  it('reads `none` as no group for scalingGroup (removing it would default it to "default")', () => {
    expect(editFromFields("set-member", { member: "a", scalingGroup: "none" })).toEqual({
      ok: true,
      value: { op: "set-member", member: "a", config: { scalingGroup: "" } },
    });
  });
});

describe("envTimeline", () => {
  it("orders Events newest first by their series, eventTime or timestamps, keeping the newest", () => {
    const e = (name: string, times: Record<string, unknown>) =>
      ({
        involvedObject: { kind: "SandboxEnv", name: "py" },
        reason: name,
        message: name,
        ...times,
      }) as never;
    const timeline = envTimeline(
      [
        e("old", { lastTimestamp: "2026-11-26T09:00:00Z" }),
        e("events-api", { eventTime: "2026-11-26T09:00:02.000123Z" }),
        e("series", {
          eventTime: "2026-11-26T08:00:00Z",
          series: { count: 3, lastObservedTime: "2026-11-26T09:00:03Z" },
        }),
        e("created", { metadata: { creationTimestamp: new Date("2026-11-26T09:00:01Z") } }),
      ],
      3,
    );
    expect(timeline.map((t) => [t.reason, t.time, t.count])).toEqual([
      ["series", "2026-11-26T09:00:03.000Z", 3],
      ["events-api", "2026-11-26T09:00:02.000Z", 1],
      ["created", "2026-11-26T09:00:01.000Z", 1],
    ]);
    expect(timeline[0]?.object).toBe("SandboxEnv/py");
  });
});
