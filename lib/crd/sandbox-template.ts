// SandboxTemplate (cluster-scoped): a reusable sandbox runtime definition that pools and envs
// are created from. Also home of the embedded template fields (Pod template, idle image,
// runtimes) that SandboxPoolSpec carries inline.
import * as v from "valibot";
import {
  Conditions,
  Int32,
  kindObject,
  listMap,
  listObject,
  PreservedObject,
  Probe,
  Protocol,
} from "./common.ts";
import { KIND } from "./keys.ts";

/** SandboxRuntimeSpec is one runtime (agent protocol server) served by every Pod of a pool. */
export const SandboxRuntimeSpec = v.object({
  name: v.pipe(v.string(), v.description("Name of the runtime, e.g. e2b or swerex; the list key.")),
  // The 1..65535 bounds are an addition to the seed (which only says int32): any other value
  // cannot be a listening port, so the CRD and the runtime check both reject it.
  port: v.optional(
    v.pipe(Int32, v.minValue(1), v.maxValue(65535), v.description("Port the runtime listens on.")),
  ),
  protocol: v.optional(v.pipe(Protocol, v.description("Protocol of the port: TCP, UDP or SCTP.")), "TCP"),
  description: v.optional(v.pipe(v.string(), v.description("Human-readable description of the runtime."))),
  logDir: v.optional(
    v.pipe(
      v.string(),
      v.description("Path of the runtime's log file in the container, read by the logs API."),
    ),
  ),
  readinessProbe: v.optional(v.pipe(Probe, v.description("Readiness check of the runtime."))),
  config: v.optional(
    v.pipe(
      PreservedObject,
      v.description("Runtime-specific configuration; its shape depends on the runtime."),
    ),
  ),
});
export type SandboxRuntimeSpec = v.InferOutput<typeof SandboxRuntimeSpec>;

/**
 * embeddedTemplateEntries are the EmbeddedSandboxTemplate fields, spread inline into the
 * template and pool specs (the Go type embeds them with `json:",inline"`).
 */
export const embeddedTemplateEntries = {
  template: v.optional(
    v.pipe(
      PreservedObject,
      v.description(
        "Pod template shared by every Pod of the pool (same resources). Its image is the idle image unless idleImage is set.",
      ),
    ),
  ),
  idleImage: v.optional(
    v.pipe(
      v.string(),
      v.description("Image of idle Pods; defaults to the first container's image of the template."),
    ),
  ),
  runtimes: v.optional(
    v.pipe(
      listMap(SandboxRuntimeSpec, "name"),
      v.description("Runtimes served by the sandbox Pods; a default runtime is used when empty."),
    ),
  ),
};

/** EmbeddedSandboxTemplate is the part of a template that a pool copies at creation. */
export const EmbeddedSandboxTemplate = v.object(embeddedTemplateEntries);
export type EmbeddedSandboxTemplate = v.InferOutput<typeof EmbeddedSandboxTemplate>;

/** TemplateVisibilityRule matches callers by team AND users; an empty field matches anyone. */
export const TemplateVisibilityRule = v.object({
  team: v.optional(
    v.pipe(v.string(), v.description("Team that can see the template; empty means any team.")),
  ),
  users: v.optional(
    v.pipe(v.array(v.string()), v.description("Users that can see the template; empty means any user.")),
  ),
});

/** TemplateVisibility limits who sees a template: a caller matching any rule (OR) sees it. */
export const TemplateVisibility = v.object({
  rules: v.optional(
    v.pipe(
      v.array(TemplateVisibilityRule),
      v.description("Visibility rules, ORed; an empty list makes the template public."),
    ),
  ),
});
export type TemplateVisibility = v.InferOutput<typeof TemplateVisibility>;

/** SandboxTemplateSpec is the desired state of a SandboxTemplate. */
export const SandboxTemplateSpec = v.pipe(
  v.object({
    ...embeddedTemplateEntries,
    version: v.optional(v.pipe(v.string(), v.description('Optional semantic version, e.g. "v1.2.0".'))),
    description: v.optional(v.pipe(v.string(), v.description("Human-readable description of the template."))),
    visibility: v.optional(
      v.pipe(TemplateVisibility, v.description("Which tenants can see the template; public when unset.")),
    ),
  }),
  v.description("Desired state of the SandboxTemplate."),
);
export type SandboxTemplateSpec = v.InferOutput<typeof SandboxTemplateSpec>;

/** SandboxTemplateStatus is the observed state of a SandboxTemplate. */
export const SandboxTemplateStatus = v.pipe(
  v.object({
    conditions: v.optional(
      v.pipe(Conditions, v.description("Current state of the template (Available, Progressing, Degraded).")),
    ),
  }),
  v.description("Observed state of the SandboxTemplate."),
);

/** SandboxTemplate is a cluster-scoped, reusable sandbox runtime definition. */
export const SandboxTemplate = v.pipe(
  kindObject(KIND.SANDBOX_TEMPLATE, SandboxTemplateSpec, SandboxTemplateStatus),
  v.description("SandboxTemplate is a reusable sandbox runtime definition that pools are created from."),
);
export type SandboxTemplate = v.InferOutput<typeof SandboxTemplate>;
export type SandboxTemplateInput = v.InferInput<typeof SandboxTemplate>;

/** SandboxTemplateList is a list of SandboxTemplates as the apiserver returns it. */
export const SandboxTemplateList = listObject("SandboxTemplateList", SandboxTemplate);
export type SandboxTemplateList = v.InferOutput<typeof SandboxTemplateList>;
