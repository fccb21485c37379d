// The sandbox domains of local clusters: the host's serving certificate of every cluster `up`
// makes covers both wildcards, so a cluster started for `npm start` serves the tests too when
// reused (AGENTBOX_CLUSTER), and the other way round.

/** DEV_SANDBOX_DOMAIN is `npm start`'s: `*.localhost` resolves to loopback on most systems. */
export const DEV_SANDBOX_DOMAIN = "sandbox.localhost";

/** TEST_SANDBOX_DOMAIN is the test host's: `.test` is reserved (RFC 6761), so nothing leaves the machine by accident. */
export const TEST_SANDBOX_DOMAIN = "sandbox.agentbox.test";

/** LOCAL_SANDBOX_DOMAINS are the wildcards a local cluster's host certificate covers. */
export const LOCAL_SANDBOX_DOMAINS = [DEV_SANDBOX_DOMAIN, TEST_SANDBOX_DOMAIN] as const;
