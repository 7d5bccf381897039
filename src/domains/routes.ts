/**
 * Routes of the domains module: parse → service → shape. Domains are shared by
 * both modes. A sandbox key may add, list, read and verify them (an unverified
 * domain sends no live mail, and verify only looks DNS up as the re-check
 * worker does); deleting a domain (which cancels its live mail) and rotating
 * its DKIM key (which changes how live mail is signed) need a live key.
 */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { pageSchema, paginationQuery, toPage } from '../http/pagination';
import { DKIM_ALGORITHMS } from './keys';
import {
  addDomain, addEd25519Key, deleteDomain, getDomain, listDomains, removeEd25519Key, rotateDkim, verifyDomainByName, type DomainsContext,
} from './service';
import { senderRules } from './sender-rules';
import { domainDetailSchema, domainSchema, shapeDomain, shapeSenderRules, type DomainView } from './view';
import { verificationResolver } from './verify';

const createBody = z.strictObject({
  name: z.string().max(1000).describe('The domain to send from, e.g. example.com. Internationalised names are stored in punycode.'),
  dkim_algorithm: z.enum(DKIM_ALGORITHMS).default('rsa').describe('rsa (2048-bit, default) or ed25519.'),
  dkim_ed25519: z.boolean().default(false)
    .describe('Also create an Ed25519 key (RFC 8463): every message then carries two DKIM signatures, Ed25519 and RSA. RSA domains only.'),
});

const domainParam = z.object({ domain: z.string().max(1000).describe('The domain name.') });

const deletedSchema = z.object({
  name: z.string(),
  deleted: z.literal(true),
  cancelled_messages: z.number().int().describe('Scheduled, queued and deferred messages from this domain that were cancelled.'),
});

export function registerDomainRoutes(api: ApiRouter, deps: AppDeps): void {
  const ctx: DomainsContext = {
    db: deps.db, config: deps.config, clock: deps.clock, log: deps.log, signals: deps.signals,
    resolver: verificationResolver(deps.config),
  };
  const readCtx: DomainsContext = { ...ctx, db: deps.reader }; // the GETs only read
  const shape = (b: Parameters<typeof shapeDomain>[1]) => shapeDomain(deps.config, b);
  const tag = 'Domains';

  api.add({
    method: 'post', path: '/v1/domains', scope: 'domains:manage', tag,
    summary: 'Add a sending domain',
    description: 'Validates the name, creates a DKIM key pair (two with dkim_ed25519) and returns the DNS records to publish. ' +
      '422 invalid_domain, 422 invalid_dkim (dkim_ed25519 with dkim_algorithm ed25519), 409 domain_exists, 409 limit_reached beyond limits.domainsPerAccount domains.',
    body: createBody,
    responses: { 201: { description: 'The new domain with its DNS records', schema: domainSchema } },
    async handler({ body, caller }) {
      const input = { name: body.name, dkimAlgorithm: body.dkim_algorithm, dkimEd25519: body.dkim_ed25519, maxDomains: deps.config.limits.domainsPerAccount };
      const added = await addDomain(ctx, caller.accountId, input);
      return { status: 201, body: shape(added) };
    },
  });

  api.add({
    method: 'get', path: '/v1/domains', scope: 'domains:manage', tag,
    summary: 'List domains', description: 'Newest first, with each record\'s last known state.',
    query: z.object(paginationQuery),
    responses: { 200: { description: 'A page of domains', schema: pageSchema(domainSchema) } },
    async handler({ query, caller }) {
      const page = await listDomains(readCtx, caller.accountId, query.limit + 1, query.cursor);
      return { status: 200, body: toPage(page.items, query.limit, page.total, (b) => b.domain.id, shape) };
    },
  });

  api.add({
    method: 'get', path: '/v1/domains/{domain}', scope: 'domains:manage', tag, extension: true,
    summary: 'Get a domain', params: domainParam,
    description: 'The domain with its records and, as an extension, `sender_rules`: whether its mail meets the Gmail/Yahoo sender requirements ' +
      '(DKIM and SPF alignment with the From domain, a DMARC record and its policy, one-click unsubscribe for bulk mail). The DMARC record is looked up now.',
    responses: { 200: { description: 'The domain', schema: domainDetailSchema } },
    async handler({ params, caller }) {
      const bundle = await getDomain(readCtx, caller.accountId, params.domain);
      const rules = await senderRules(ctx.resolver!, deps.config, bundle);
      return { status: 200, body: { ...shape(bundle), sender_rules: shapeSenderRules(rules) } };
    },
  });

  api.add({
    method: 'post', path: '/v1/domains/{domain}/verify', scope: 'domains:manage', tag,
    summary: 'Verify DNS records',
    description: 'Looks every record up now. The domain becomes verified when DKIM and SPF pass. DNS timeouts show as temporary_error on the record (still 200).',
    params: domainParam,
    responses: { 200: { description: 'The domain with each record\'s state', schema: domainSchema } },
    async handler({ params, caller }) {
      return { status: 200, body: shape(await verifyDomainByName(ctx, caller.accountId, params.domain)) };
    },
  });

  api.add({
    method: 'post', path: '/v1/domains/{domain}/dkim/rotate', scope: 'domains:manage', tag, extension: true, liveOnly: true,
    summary: 'Start a DKIM key rotation',
    description: 'Adds a pending key with a new selector (same algorithm). It signs only after its record verifies; publish it, then verify. ' +
      '409 rotation_pending if one is waiting. Needs a live key (403 live_key_required).',
    params: domainParam,
    responses: { 200: { description: 'The domain, with the pending DKIM record', schema: domainSchema } },
    async handler({ params, caller }) {
      return { status: 200, body: shape(await rotateDkim(ctx, caller.accountId, params.domain)) };
    },
  });

  registerEd25519Routes(api, ctx, shape);

  api.add({
    method: 'delete', path: '/v1/domains/{domain}', scope: 'domains:manage', tag, liveOnly: true,
    summary: 'Delete a domain',
    description: 'Removes the domain and its keys; its scheduled, queued and deferred messages are cancelled. Sent history stays. ' +
      'Needs a live key (403 live_key_required).',
    params: domainParam,
    responses: { 200: { description: 'Deleted', schema: deletedSchema } },
    async handler({ params, caller }) {
      const result = await deleteDomain(ctx, caller.accountId, params.domain);
      return { status: 200, body: { name: result.name, deleted: true, cancelled_messages: result.cancelledMessages } };
    },
  });
}

/** The optional Ed25519 second key: add, rotate, remove. Each changes how live mail is signed, so each needs a live key. */
function registerEd25519Routes(api: ApiRouter, ctx: DomainsContext, shape: (b: Parameters<typeof shapeDomain>[1]) => DomainView): void {
  const common = { scope: 'domains:manage', tag: 'Domains', extension: true, liveOnly: true, params: domainParam } as const;
  const responses = { 200: { description: 'The domain, with its Ed25519 DKIM record', schema: domainSchema } };
  api.add({
    ...common, method: 'post', path: '/v1/domains/{domain}/dkim/ed25519', responses,
    summary: 'Add an Ed25519 key (second signature)',
    description: 'Adds a pending Ed25519 key with its own selector (k=ed25519 record). Once its record verifies, every message carries two ' +
      'DKIM signatures (Ed25519 and RSA) and the record is required. 409 dkim_ed25519_exists, 409 dkim_ed25519_primary if the domain\'s key ' +
      'is Ed25519. Needs a live key (403 live_key_required).',
    handler: async ({ params, caller }) => ({ status: 200, body: shape(await addEd25519Key(ctx, caller.accountId, params.domain)) }),
  });
  api.add({
    ...common, method: 'post', path: '/v1/domains/{domain}/dkim/ed25519/rotate', responses,
    summary: 'Start a rotation of the Ed25519 key',
    description: 'Adds a pending Ed25519 key with a new selector; it replaces the active one once its record verifies. 404 without an Ed25519 key, ' +
      '409 rotation_pending. Needs a live key (403 live_key_required).',
    handler: async ({ params, caller }) => ({ status: 200, body: shape(await rotateDkim(ctx, caller.accountId, params.domain, 'second')) }),
  });
  api.add({
    ...common, method: 'delete', path: '/v1/domains/{domain}/dkim/ed25519', responses,
    summary: 'Remove the Ed25519 key',
    description: 'Messages carry the primary signature only (within a minute: signing keys are cached that long). 404 without an Ed25519 key. ' +
      'Needs a live key (403 live_key_required).',
    handler: async ({ params, caller }) => ({ status: 200, body: shape(await removeEd25519Key(ctx, caller.accountId, params.domain)) }),
  });
}
