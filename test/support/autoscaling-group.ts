import type { EnvAutoscalingGroup } from "../../lib/crd/autoscaling.ts";

/** GroupOptions override an autoscaling group's fields; `up` and `down` its two policies. */
export type GroupOptions = Partial<Omit<EnvAutoscalingGroup, "scaleUpPolicy" | "scaleDownPolicy">> & {
  up?: Partial<EnvAutoscalingGroup["scaleUpPolicy"]>;
  down?: Partial<EnvAutoscalingGroup["scaleDownPolicy"]>;
};

/**
 * autoscalingGroup is an enabled group named "default" with every policy field spelled out at
 * its CRD default, so a test overrides exactly what it checks (unit tables and integration tests).
 */
export function autoscalingGroup(o: GroupOptions = {}): EnvAutoscalingGroup {
  const { up, down, ...rest } = o;
  return {
    name: "default",
    enabled: true,
    minReplicas: 0,
    ...rest,
    scaleUpPolicy: {
      mode: "Default",
      cooldownSeconds: 30,
      idleThresholdSeconds: 30,
      idleZeroQuietWindowSeconds: 300,
      saturationCooldownSeconds: 60,
      ...up,
    },
    scaleDownPolicy: {
      idleTimeoutSeconds: 300,
      stabilizationSeconds: 60,
      protectionWindowSeconds: 10,
      ...down,
    },
  };
}
