/**
 * The one source of truth for configuration. Every key has a default and a
 * `.describe()`; `config/default.json` and the README table are generated from
 * this schema (see `pigeon config defaults|docs`), and a test keeps them equal.
 *
 * Loading: a JSON file (`--config FILE` or PIGEON_CONFIG) is deep-merged over
 * the defaults, then validated. Unknown keys are errors, so a typo cannot
 * silently leave a setting at its default.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

const hostPort = (host: string, port: number, what: string) => ({
  host: z.string().min(1).default(host).describe(`Address the ${what} binds to.`),
  port: z.number().int().min(0).max(65535).default(port).describe(`TCP port of the ${what} (0 picks a free port).`),
});

const sourceIp = z.strictObject({
  address: z.string().describe('A source IP address this host owns; outbound SMTP binds to it.'),
  hostname: z.string().describe('EHLO name for this address; its PTR record should point here.'),
  weight: z.number().int().min(1).max(100).default(1).describe('Relative share of traffic within a pool.'),
  account: z.string().optional()
    .describe('Name of the one account this address is dedicated to: only that account sends from it, and its live keys may manage its warm-up through the API. Unset: shared, warm-up is the operator\'s (CLI).'),
});

const compatLayer = (name: string) => z.strictObject({
  host: z.string().min(1).default('127.0.0.1').describe(`Address the ${name} compatibility listener binds to.`),
  port: z.number().int().min(0).max(65535).nullable().default(null)
    .describe(`Also serve the ${name} layer at the root of its own port (for clients whose base URL cannot carry a path); null: only under /${name} on the API port.`),
}).prefault({}).describe(`The ${name} compatibility layer.`);

export const configSchema = z.strictObject({
  hostname: z.string().min(1).default('mail.example.com')
    .describe('Public host name of this appliance: Message-ID domain, default EHLO name and bounce domain.'),
  dataDir: z.string().min(1).default('./data')
    .describe('Folder for the SQLite database, the at-rest encryption key and generated TLS material.'),
  log: z.strictObject({
    level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')
      .describe('Minimum level of the JSON log written to stdout.'),
  }).prefault({}).describe('Logging.'),
  http: z.strictObject({
    ...hostPort('127.0.0.1', 8080, 'REST API'),
    publicUrl: z.string().url().default('http://127.0.0.1:8080')
      .describe('Base URL the outside world reaches the API on; used in tracking and unsubscribe links.'),
    trustProxy: z.boolean().default(false)
      .describe('Take the client address from the last X-Forwarded-For entry (set only behind a reverse proxy).'),
    jsonLimitBytes: z.number().int().positive().default(1_048_576)
      .describe('Largest JSON body accepted by endpoints other than send (413 above it).'),
    shutdownTimeoutMs: z.number().int().positive().default(10_000)
      .describe('How long a stop waits for in-flight work before closing anyway.'),
  }).prefault({}).describe('HTTP API.'),
  smtp: z.strictObject({
    submission: z.strictObject({
      ...hostPort('127.0.0.1', 2587, 'SMTP submission server'),
      secure: z.boolean().default(false).describe('Implicit TLS on connect (port 465 style) instead of STARTTLS.'),
      allowInsecureAuth: z.boolean().default(false)
        .describe('Allow AUTH without TLS. Only for tests and loopback-only setups.'),
      tlsCert: z.string().default('').describe('PEM certificate file; empty generates a self-signed one in dataDir.'),
      tlsKey: z.string().default('').describe('PEM private key file matching tlsCert.'),
      maxConnectionsPerClient: z.number().int().positive().default(20)
        .describe('Concurrent connections allowed from one client address.'),
      maxClients: z.number().int().positive().default(500)
        .describe('Concurrent connections allowed in total; more get 421 and are closed.'),
      socketTimeoutMs: z.number().int().positive().default(60_000).describe('Idle time before a session is closed.'),
    }).prefault({}).describe('Submission port for applications relaying with an API key.'),
    inbound: z.strictObject({
      ...hostPort('127.0.0.1', 2525, 'inbound bounce/complaint listener'),
      feedbackAddress: z.string().default('')
        .describe('Extra address accepted for feedback-loop (ARF) reports, e.g. fbl@mail.example.com.'),
      maxMessageBytes: z.number().int().positive().default(1024 * 1024)
        .describe('Largest report accepted, announced in SIZE and refused above it with 552 (a report needs its headers and first part, not a whole original).'),
      messagesPerMinutePerClient: z.number().int().positive().default(60)
        .describe('Reports accepted from one remote address per minute; more get 450 until the minute passes.'),
      connectionsPerMinutePerClient: z.number().int().positive().default(120)
        .describe('New connections accepted from one remote address per minute; more get 421 and are closed.'),
      maxConnectionsPerClient: z.number().int().positive().default(10)
        .describe('Concurrent connections allowed from one remote address.'),
      maxClients: z.number().int().positive().default(200)
        .describe('Concurrent connections allowed in total; more get 421 and are closed.'),
      socketTimeoutMs: z.number().int().positive().default(60_000).describe('Idle time before a session is closed.'),
    }).prefault({}).describe('Inbound listener for DSN bounces and ARF complaints.'),
    relay: z.strictObject({
      enabled: z.boolean().default(false)
        .describe('Start a plain SMTP relay listener without AUTH, for devices and apps that cannot authenticate: only clients in a key\'s relay network (pigeon keys create --relay-from CIDR) may send through it.'),
      ...hostPort('127.0.0.1', 25, 'relay-by-network listener (bind it to the internal interface the devices reach)'),
      maxConnectionsPerClient: z.number().int().positive().default(20)
        .describe('Concurrent connections allowed from one client address.'),
      maxClients: z.number().int().positive().default(200)
        .describe('Concurrent connections allowed in total; more get 421 and are closed.'),
      socketTimeoutMs: z.number().int().positive().default(60_000).describe('Idle time before a session is closed.'),
    }).prefault({}).describe('Relay listener for clients that relay by network (off by default; the submission port accepts relay networks too).'),
  }).prefault({}).describe('SMTP listeners.'),
  dns: z.strictObject({
    servers: z.array(z.string()).default([])
      .describe('Resolvers as "host:port" for every lookup (MX, verification, SPF); empty uses the system resolver.'),
    timeoutMs: z.number().int().positive().default(3000).describe('Timeout of one DNS query.'),
  }).prefault({}).describe('DNS resolution.'),
  delivery: z.strictObject({
    port: z.number().int().min(1).max(65535).default(25).describe('Port dialled on recipient MX hosts.'),
    bounceDomain: z.string().default('').describe('Domain of the VERP return-path; empty uses hostname.'),
    queueLifetimeHours: z.number().positive().default(72)
      .describe('How long a deferred message is retried before it becomes a soft bounce.'),
    concurrency: z.number().int().positive().default(50).describe('Messages in flight at once across all destinations.'),
    maxConnectionsPerDomain: z.number().int().positive().default(5)
      .describe('Concurrent SMTP connections to one destination MX host.'),
    maxConnectionsPerIp: z.number().int().positive().default(50)
      .describe('Concurrent SMTP connections from one source address.'),
    messagesPerConnection: z.number().int().positive().default(100)
      .describe('Messages sent over one SMTP connection before it is closed.'),
    connectTimeoutMs: z.number().int().positive().default(30_000).describe('TCP connect timeout to an MX host.'),
    greetingTimeoutMs: z.number().int().positive().default(30_000).describe('Wait for the MX banner.'),
    commandTimeoutMs: z.number().int().positive().default(60_000).describe('Wait for each SMTP command reply.'),
    dataTimeoutMs: z.number().int().positive().default(300_000).describe('Wait for the reply to the end of data.'),
    leaseSeconds: z.number().int().positive().default(600)
      .describe('A claimed queue row returns to the queue if its worker has not finished within this time.'),
    idleConnectionMs: z.number().int().min(0).default(5000)
      .describe('How long an idle outbound SMTP connection is kept open for the next message to the same MX host.'),
    mxCacheSeconds: z.number().int().min(0).default(60)
      .describe('How long MX and address answers are reused (Node does not expose MX TTLs); 0 disables the cache.'),
    signingThreads: z.union([z.number().int().min(0).max(16), z.literal('auto')]).default('auto')
      .describe('Worker threads that make DKIM signatures: auto is one per core (os.availableParallelism(), at most 16); 0 signs on the main thread.'),
    bounceRulesFile: z.string().default('')
      .describe('Optional JSON file of extra bounce rules, tried before the built-in ones (see docs/delivery.md).'),
    allowPrivateTargets: z.boolean().default(false)
      .describe('Deliver to MX hosts that resolve to loopback/private/link-local addresses (tests, lab setups). Off: such a recipient hard-bounces with category policy.'),
    tlsCaFile: z.string().default('')
      .describe('PEM file of extra certificate authorities trusted, beside the system roots, for MX certificates and MTA-STS policy hosts (private CA, tests).'),
    mtaSts: z.strictObject({
      enabled: z.boolean().default(true)
        .describe('Look up and apply recipient domains\' MTA-STS policies (RFC 8461); off: opportunistic STARTTLS everywhere.'),
      httpsPort: z.number().int().min(1).max(65535).default(443)
        .describe('Port of the policy host https://mta-sts.<domain>/ (tests and lab setups only; RFC 8461 says 443).'),
      fetchTimeoutMs: z.number().int().positive().default(10_000).describe('A policy fetch (connect, TLS, answer) not done in this time fails.'),
      cacheEntries: z.number().int().positive().default(10_000)
        .describe('Recipient domains whose policy answer is kept in memory (for delivery.mxCacheSeconds); the database keeps every policy by its max_age.'),
    }).prefault({}).describe('MTA-STS: verified TLS toward domains that publish a policy (see docs/tls.md).'),
    tlsReports: z.strictObject({
      enabled: z.boolean().default(true)
        .describe('Count TLS sessions toward domains that publish _smtp._tls and send them a daily RFC 8460 report.'),
      from: z.string().default('')
        .describe('Reporting address the mailto: reports come from; empty uses tlsrpt-noreply@<hostname>.'),
      organization: z.string().default('')
        .describe('organization-name of the reports; empty uses hostname.'),
      contact: z.string().default('')
        .describe('contact-info of the reports; empty uses the reporting address.'),
      timeoutMs: z.number().int().positive().default(30_000).describe('An https: report POST or mailto: SMTP session not done in this time fails.'),
    }).prefault({}).describe('TLS reporting (RFC 8460; see docs/tls.md).'),
  }).prefault({}).describe('Outbound MTA.'),
  ips: z.array(sourceIp).default([{ address: '127.0.0.1', hostname: 'mail.example.com', weight: 1 }])
    .describe('Source addresses given to the appliance; IP pools are made from these.'),
  pools: z.strictObject({
    providerShare: z.record(z.string().regex(/^[a-z0-9-]+$/), z.number().min(0).max(1))
      .default({ gmail: 0.4, microsoft: 0.3, yahoo: 0.2, apple: 0.1 })
      .describe('Share of a warming IP\'s daily cap each mailbox provider may use (provider ids from the provider MX file); other destinations may use the whole cap.'),
    providerMxFile: z.string().default('')
      .describe('Optional JSON file of extra provider MX patterns, tried before the built-in config/provider-mx.json (see docs/ip-pools.md).'),
    throttleRulesFile: z.string().default('')
      .describe('Optional JSON file of extra throttling-reply rules, tried before the built-in ones (see docs/ip-pools.md).'),
    throttle: z.strictObject({
      cooldownMinutes: z.number().positive().default(30)
        .describe('How long an IP stays slowed toward a provider after a throttling reply; each further reply in the cool-down doubles it.'),
      maxCooldownMinutes: z.number().positive().default(240).describe('Longest cool-down, however many throttling replies arrive.'),
      messagesPerMinute: z.number().positive().default(20)
        .describe('Rate from one IP to one throttled provider at the first level of cool-down; each further level halves it.'),
      connections: z.number().int().positive().default(1)
        .describe('Messages in flight at once from one IP to one provider during a cool-down.'),
    }).prefault({}).describe('Slowing down after "rate limited" or "reputation" replies.'),
  }).prefault({}).describe('IP pools: warm-up budgets and throttling.'),
  domains: z.strictObject({
    recheckIntervalHours: z.number().positive().default(6)
      .describe('How often verified (and failing) sending domains have their DNS records looked up again.'),
    failingGraceHours: z.number().positive().default(72)
      .describe('How long a domain whose records disappeared stays sendable (failing) before it becomes pending again.'),
    spfInclude: z.string().default('')
      .describe('When set (e.g. _spf.mail.example.com), domains are asked for "v=spf1 include:<this> ~all" instead of listing the ips.'),
    returnPathLabel: z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/).default('bounces')
      .describe('Label of the optional return-path CNAME (<label>.<domain> pointing at the bounce host).'),
    dnsTimeoutMs: z.number().int().positive().default(2000)
      .describe('Timeout of one DNS query during domain verification (kept short so a verify request answers quickly).'),
  }).prefault({}).describe('Sending domains: verification and re-checks.'),
  reputation: z.strictObject({
    enabled: z.boolean().default(false)
      .describe('Watch the reputation of each address in ips: DNSBL listings and forward-confirmed reverse DNS, every intervalMinutes (see docs/ip-pools.md). Off by default: public DNSBLs rate-limit, and Spamhaus refuses queries through public resolvers.'),
    dnsblZones: z.array(z.string().regex(/^(?=.{1,200}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i, 'a DNS zone such as zen.spamhaus.org')).max(20)
      .default(['zen.spamhaus.org', 'b.barracudacentral.org', 'bl.spamcop.net'])
      .describe('DNSBL zones each address is looked up in (an A answer in 127.0.0.0/8 is a listing).'),
    intervalMinutes: z.number().int().min(5).default(60).describe('How often every address is checked again.'),
  }).prefault({}).describe('Reputation watch of the sending addresses.'),
  webhooks: z.strictObject({
    allowPrivateTargets: z.boolean().default(false)
      .describe('Allow webhook URLs that resolve to loopback/private/link-local addresses (tests, local dev).'),
    allowHttp: z.boolean().default(false).describe('Allow plain http:// webhook URLs.'),
    timeoutMs: z.number().int().positive().default(10_000).describe('A webhook POST not answered 2xx in this time fails.'),
    concurrency: z.number().int().positive().default(10).describe('Webhook requests in flight at once.'),
    perWebhookConcurrency: z.number().int().positive().default(2)
      .describe('Requests in flight at once to one webhook, so a slow endpoint cannot take every slot.'),
    pollIntervalMs: z.number().int().positive().default(30_000)
      .describe('Longest the dispatcher sleeps between looks for due deliveries (rows written by another process).'),
    tlsCaFile: z.string().default('')
      .describe('PEM file of extra certificate authorities trusted for HTTPS webhook receivers (private CA).'),
  }).prefault({}).describe('Webhook dispatcher.'),
  tracking: z.strictObject({
    trackOpensDefault: z.boolean().default(false)
      .describe('Open tracking (pixel) for sends that do not set track_opens.'),
    trackClicksDefault: z.boolean().default(false)
      .describe('Click tracking (rewritten links) for sends that do not set track_clicks.'),
  }).prefault({}).describe('Open and click tracking (links point at http.publicUrl).'),
  suppressions: z.strictObject({
    uploadMaxBytes: z.number().int().positive().default(64 * 1024 * 1024)
      .describe('Largest suppression CSV accepted by POST /v1/suppressions/upload (413 above it).'),
    uploadBatchRows: z.number().int().min(100).max(100_000).default(5000)
      .describe('Rows an upload writes to its staging table per transaction, so other writers get turns between batches.'),
  }).prefault({}).describe('Suppression list.'),
  limits: z.strictObject({
    maxRecipients: z.number().int().min(1).max(1000).default(50).describe('Recipients (to+cc+bcc) per send.'),
    maxMessageBytes: z.number().int().positive().default(10 * 1024 * 1024)
      .describe('Largest message after MIME encoding (413 above it).'),
    sendAtHorizonHours: z.number().positive().default(72).describe('How far ahead send_at may schedule a message.'),
    templateSourceBytes: z.number().int().positive().default(512 * 1024)
      .describe('Longest template source (subject, html or text of a send or stored template), checked before compiling (422).'),
    templateNestingDepth: z.number().int().min(1).max(200).default(24)
      .describe('Deepest nesting of template blocks ({{#if}}, {{#each}}, {{#with}} …), checked before compiling (422).'),
    keysPerAccount: z.number().int().positive().default(100).describe('Active API keys one account may have.'),
    webhooksPerAccount: z.number().int().positive().default(20).describe('Webhooks one account may have in each mode (live keys\' and sandbox keys\' are counted apart).'),
    templatesPerAccount: z.number().int().positive().default(500).describe('Stored templates one account may have.'),
    domainsPerAccount: z.number().int().positive().default(100).describe('Sending domains one account may have.'),
  }).prefault({}).describe('Sending limits and per-account caps.'),
  messages: z.strictObject({
    groupCommit: z.boolean().default(true)
      .describe('The shared writer commits work that arrives together (sends, delivery outcomes, events) in one transaction; each caller is still answered only after the commit that holds its work. Off: one transaction per piece of work.'),
    groupCommitWindowMs: z.number().int().min(0).max(50).default(0)
      .describe('How long the writer waits for more work before a group\'s commit starts (0: the next event-loop turn).'),
    groupCommitMaxMessages: z.number().int().min(1).max(10_000).default(1000)
      .describe('Most work, counted in messages (recipient copies), in one writer transaction.'),
    mimeThreads: z.union([z.number().int().min(0).max(16), z.literal('auto')]).default('auto')
      .describe('Worker threads that build the MIME of API sends: auto is one fewer than the cores (at least 1, at most 4); 0 builds on the main thread.'),
    bulkTags: z.array(z.string().min(1).max(64)).max(50).default(['bulk', 'marketing', 'newsletter'])
      .describe('Tags that mark a message as bulk: such messages get one-click List-Unsubscribe headers (RFC 8058, as Gmail and Yahoo require of bulk mail) unless the send sets list_unsubscribe or brings its own List-Unsubscribe header. Case-insensitive.'),
  }).prefault({}).describe('Accepting messages (send API and SMTP submission).'),
  rateLimit: z.strictObject({
    requestsPerSecond: z.number().positive().default(100).describe('Sustained API requests per second per key.'),
    burst: z.number().int().positive().default(200).describe('Requests a key may make at once before throttling.'),
    authFailuresPerMinute: z.number().int().positive().default(20)
      .describe('Failed authentications from one address per minute before it gets 429 (API) or 454 (SMTP).'),
  }).prefault({}).describe('Rate limits.'),
  compat: z.strictObject({ postmark: compatLayer('postmark'), resend: compatLayer('resend'), sendgrid: compatLayer('sendgrid') })
    .prefault({}).describe('Drop-in compatibility layers for Postmark, Resend and SendGrid clients (docs/compat.md).'),
  console: z.strictObject({
    secureCookies: z.boolean().default(false)
      .describe('Mark the session cookie Secure even when the request did not arrive over TLS (set it when a TLS proxy in front does not send X-Forwarded-Proto).'),
    sessionIdleMinutes: z.number().int().positive().default(720)
      .describe('A console session unused this long is signed out.'),
    sessionMaxHours: z.number().int().positive().default(168)
      .describe('A console session ends this long after sign-in, used or not.'),
    signInMaxFailures: z.number().int().positive().default(5)
      .describe('Sign-in attempts per (email, client address), and per client address, within signInWindowMinutes before sign-in answers 429 (a success takes its own attempt back).'),
    signInWindowMinutes: z.number().int().positive().default(15)
      .describe('The window over which failed sign-ins are counted.'),
  }).prefault({}).describe('Web console: users\' sessions and sign-in throttling.'),
  metrics: z.strictObject({
    enabled: z.boolean().default(true).describe('Serve Prometheus metrics on their own listener.'),
    ...hostPort('127.0.0.1', 9464, 'Prometheus /metrics listener (kept off the API port)'),
    token: z.string().default('')
      .describe('When set, /metrics requires "Authorization: Bearer <token>" (set it before binding beyond loopback).'),
  }).prefault({}).describe('Prometheus metrics.'),
  node: z.strictObject({
    id: z.string().max(64).regex(/^[A-Za-z0-9._-]*$/, 'letters, digits, ".", "_" and "-" only').default('')
      .describe('This node\'s name when several nodes share one PostgreSQL database (it marks the leases this node holds); empty uses the hostname.'),
    electionRetryMs: z.number().int().min(100).max(600_000).default(5_000)
      .describe('PostgreSQL: how often a node not elected for background work (re-checks, reputation watch, TLS reports) tries to take the advisory lock, and how often the elected node checks its session.'),
  }).prefault({}).describe('This node, when several share a database (README "Running several nodes").'),
  database: z.strictObject({
    client: z.enum(['sqlite', 'postgres']).default('sqlite')
      .describe('sqlite: one file in dataDir, one node. postgres: the database at database.url, shared by one or more nodes.'),
    url: z.string().default('')
      .describe('postgres:// URL of the database when database.client is postgres; the environment variable PIGEON_DATABASE_URL overrides it.'),
    poolSize: z.number().int().min(2).max(100).default(10)
      .describe('PostgreSQL connections of the writer pool (the reader has 2 more; one more is held for the background-work election and one listens for the other nodes\' news).'),
    counterFlushMs: z.number().int().min(0).max(60_000).optional()
      .describe('Counter additions (analytics rollups, usage, TLS report counts) are summed in memory this long before one write; 0 writes them in each transaction. Default 1000 on PostgreSQL (several nodes add to the same rows), 0 on SQLite. A crash loses at most this long of counts (`pigeon analytics rebuild` recounts analytics).'),
    synchronous: z.enum(['FULL', 'NORMAL']).default('FULL')
      .describe('SQLite fsync policy. FULL: a committed message survives power loss; NORMAL: survives a crash only.'),
    busyTimeoutMs: z.number().int().positive().default(5000).describe('Wait for a lock held by another process (e.g. the CLI).'),
  }).prefault({}).describe('Storage: SQLite (the default) or PostgreSQL.'),
});

export type Config = z.infer<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;

export class ConfigError extends Error {}

/** Validate a partial config; throws ConfigError naming every bad key. */
export function parseConfig(input: unknown): Config {
  const result = configSchema.safeParse(input ?? {});
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => {
    const key = issue.path.join('.') || '(root)';
    if (issue.code === 'unrecognized_keys') {
      const prefix = issue.path.length ? `${key}.` : '';
      return `${issue.keys.map((k) => prefix + k).join(', ')}: unknown setting`;
    }
    return `${key}: ${issue.message}`;
  });
  throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
}

/** Read the file named by --config or PIGEON_CONFIG (if any) and validate it. */
export function loadConfig(file?: string): Config {
  const chosen = file ?? process.env.PIGEON_CONFIG;
  if (!chosen) return parseConfig({});
  let text: string;
  try {
    text = fs.readFileSync(path.resolve(chosen), 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read config file ${chosen}: ${(err as NodeJS.ErrnoException).code ?? err}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config file ${chosen} is not valid JSON: ${(err as Error).message}`);
  }
  return parseConfig(json);
}

/** Every setting with its default value and description, for docs and default.json. */
export function describeConfig(): Array<{ key: string; default: unknown; description: string }> {
  const defaults = parseConfig({}) as unknown as Record<string, unknown>;
  const rows: Array<{ key: string; default: unknown; description: string }> = [];
  walk(configSchema, '', defaults, rows);
  return rows;
}

function walk(schema: z.ZodType, prefix: string, value: unknown, rows: Array<{ key: string; default: unknown; description: string }>): void {
  const inner = unwrap(schema);
  if (inner instanceof z.ZodObject) {
    for (const [k, child] of Object.entries(inner.shape as Record<string, z.ZodType>)) {
      walk(child, prefix ? `${prefix}.${k}` : k, (value as Record<string, unknown>)?.[k], rows);
    }
    return;
  }
  rows.push({ key: prefix, default: value, description: schema.description ?? inner.description ?? '' });
}

function unwrap(schema: z.ZodType): z.ZodType {
  let s: z.ZodType = schema;
  // default/prefault/optional wrappers hide the object shape.
  while (s instanceof z.ZodDefault || s instanceof z.ZodPrefault || s instanceof z.ZodOptional) {
    s = (s as unknown as { unwrap(): z.ZodType }).unwrap();
  }
  return s;
}
