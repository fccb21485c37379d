// The agents.navix.sh/v1alpha1 API: keys, schemas (which are also the types) and parsing.
export * from "./annotations.ts";
export * from "./autoscaling.ts";
export * from "./common.ts";
export * from "./keys.ts";
export * from "./parse.ts";
export * from "./parse-with.ts";
export * from "./sandbox-env.ts";
export * from "./sandbox-env-status.ts";
export * from "./sandbox-pool.ts";
export * from "./sandbox-template.ts";
