// The kinds of value the Node host's settings take from the environment (strings), validated and
// converted with valibot: one definition each for config.ts and the settings modules beside it.
import * as v from "valibot";

/** Port is a TCP port setting (1-65535). */
export const Port = v.pipe(
  v.string(),
  v.transform(Number),
  v.integer("must be a whole number"),
  v.minValue(1),
  v.maxValue(65535),
);

/** Seconds is a duration setting in seconds, 0 or more. */
export const Seconds = v.pipe(v.string(), v.transform(Number), v.number("must be a number"), v.minValue(0));
