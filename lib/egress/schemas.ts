// The egress rules as the APIs take them (valibot): lists of CIDR blocks and IP addresses. Domain
// names (E2B filters them by SNI and Host) would need an egress proxy this control plane does not
// run, so they are refused with what is supported, as are an allowOut block inside the ranges
// that hold pods and nodes (another tenant's sandbox among them) and too many entries.
import * as v from "valibot";
import { parseCidr } from "./cidr.ts";
import { INTERNAL_RANGES, internalAllow } from "./policy.ts";

/** MAX_RULES bounds each list: they travel in a pod annotation and one NetworkPolicy. */
export const MAX_RULES = 100;

/** SUPPORTED says what an entry may be, for every refusal. */
export const SUPPORTED =
  'must be a CIDR block or an IP address (e.g. "8.8.8.0/24", "1.1.1.1", "2606:4700::/32"); domain names are not supported (they need an egress proxy, which this control plane does not run)';

const Entry = v.pipe(
  v.string(`must be a string: ${SUPPORTED}`),
  v.check((s) => parseCidr(s) !== undefined, SUPPORTED),
);

/** EgressList is allowOut's or denyOut's list; allowOut may not reach inside the internal ranges. */
export const EgressList = (kind: "allowOut" | "denyOut") =>
  v.pipe(
    v.array(Entry, "must be a list of CIDR blocks or IP addresses"),
    v.maxLength(MAX_RULES, `must have at most ${MAX_RULES} entries`),
    v.check(
      (list) => kind === "denyOut" || internalAllow(list) === undefined,
      (issue) => {
        const found = internalAllow(issue.input as string[]);
        return `${found?.entry} lies in ${found?.range}, which holds the cluster's pods, nodes or services: a sandbox may not be allowed there (internal ranges: ${INTERNAL_RANGES.join(", ")})`;
      },
    ),
  );
