/**
 * Routes of the auth module: API keys, the account, and security settings.
 * Key management and security-settings writes are live-only: a sandbox key
 * could otherwise revoke live keys, fill the key cap, or set an allowlist that
 * locks live keys out. Reading the account and the settings stays open to both.
 */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { ApiError, notFound, unprocessable } from '../http/errors';
import { pageSchema, paginationQuery, toPage } from '../http/pagination';
import { iso } from '../clock';
import { getAccount } from './accounts';
import { countActiveKeys, createKey, getKey, listKeys, revokeKey, ApiKey } from './keys';
import { checkCap } from './limits';
import { networksOfKeys } from './relay-networks';
import { parseAllowlist } from './allowlist';
import { SCOPES } from './scopes';
import { monthOf, usageFor } from './usage';

const keySchema = z.object({
  id: z.string(),
  name: z.string(),
  mode: z.enum(['test', 'live']),
  prefix: z.string().describe('The first characters of the key, for recognising it.'),
  scopes: z.array(z.enum(SCOPES)),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  revoked: z.boolean(),
  revoked_at: z.string().nullable(),
  relay_from: z.array(z.string()).optional()
    .describe('Extension, in lists: networks whose SMTP clients relay without AUTH as this key (set by the operator: pigeon keys create --relay-from).'),
});

export const shapeKey = (k: ApiKey): z.infer<typeof keySchema> => ({
  id: k.id,
  name: k.name,
  mode: k.mode,
  prefix: k.prefix,
  scopes: k.scopes,
  created_at: iso(k.createdAt) as string,
  last_used_at: iso(k.lastUsedAt),
  revoked: k.revokedAt !== null,
  revoked_at: iso(k.revokedAt),
});

const createKeyBody = z.strictObject({
  name: z.string().trim().min(1).max(100).describe('A label for the key.'),
  mode: z.enum(['test', 'live']).describe('test keys work in the sandbox; live keys deliver mail.'),
  scopes: z.array(z.enum(SCOPES)).min(1).describe('Scopes granted to the key.'),
});

const forbidden = (code: string, message: string, param: string) => new ApiError(403, 'permission_error', code, message, param);
const LIVE_ONLY = 'Needs a live key (403 live_key_required for a sandbox key).';

const securityBody = z.strictObject({
  allowed_ips: z.array(z.string().max(64)).max(1000).describe('IPv4/IPv6 addresses and CIDR ranges. Empty allows every address.'),
});
const securitySchema = z.object({ allowed_ips: z.array(z.string()), updated_at: z.string().nullable() });

export function registerAuthRoutes(api: ApiRouter, deps: AppDeps): void {
  const { db, clock, settings, config } = deps;

  api.add({
    method: 'post', path: '/v1/api-keys', scope: 'account:manage', tag: 'Account', extension: true, liveOnly: true,
    summary: 'Create an API key',
    description: `The key is returned once, in \`key\`; only its hash is stored. ${LIVE_ONLY} ` +
      'A key cannot grant scopes it lacks (403 scope_not_allowed). 409 limit_reached beyond limits.keysPerAccount active keys.',
    body: createKeyBody,
    responses: { 201: { description: 'Created', schema: keySchema.extend({ key: z.string() }) } },
    async handler({ body, caller }) {
      // A key can only hand out what it has: no more scopes than its own.
      const extra = body.scopes.filter((s) => !caller.scopes.includes(s));
      if (extra.length) throw forbidden('scope_not_allowed', `this key cannot grant scopes it lacks: ${extra.join(', ')}`, 'scopes');
      checkCap(await countActiveKeys(db, caller.accountId), config.limits.keysPerAccount, 'active API keys', 'keysPerAccount');
      const { key, secret } = await createKey(db, { accountId: caller.accountId, ...body }, clock.now());
      return { status: 201, body: { ...shapeKey(key), key: secret } };
    },
  });

  api.add({
    method: 'get', path: '/v1/api-keys', scope: 'account:manage', tag: 'Account', extension: true, liveOnly: true,
    summary: 'List API keys', description: LIVE_ONLY, query: z.object(paginationQuery),
    responses: { 200: { description: 'A page of keys', schema: pageSchema(keySchema) } },
    async handler({ query, caller }) {
      const page = await listKeys(db, caller.accountId, query.limit + 1, query.cursor);
      const networks = await networksOfKeys(db, page.items.map((k) => k.id));
      return { status: 200, body: toPage(page.items, query.limit, page.total, (k) => k.id, (k) => ({ ...shapeKey(k), relay_from: networks.get(k.id) ?? [] })) };
    },
  });

  api.add({
    method: 'delete', path: '/v1/api-keys/{id}', scope: 'account:manage', tag: 'Account', extension: true, liveOnly: true,
    summary: 'Revoke an API key', description: LIVE_ONLY, params: z.object({ id: z.string().max(64) }),
    responses: { 200: { description: 'The revoked key', schema: keySchema } },
    async handler({ params, caller }) {
      if (!(await getKey(db, caller.accountId, params.id))) throw notFound('API key', 'id');
      const key = await revokeKey(db, params.id, clock.now(), caller.accountId);
      return { status: 200, body: shapeKey(key as ApiKey) };
    },
  });

  api.add({
    method: 'get', path: '/v1/account', scope: 'account:read', tag: 'Account',
    summary: 'The account, the calling key and usage',
    responses: {
      200: {
        description: 'Account',
        schema: z.object({
          id: z.string(), name: z.string(), created_at: z.string(),
          key: z.object({ id: z.string(), mode: z.enum(['test', 'live']), scopes: z.array(z.string()) }),
          usage: z.object({ month: z.string(), billable_messages: z.number().int() }),
        }),
      },
    },
    async handler({ caller }) {
      const account = await getAccount(db, caller.accountId);
      const month = monthOf(clock.now());
      await deps.writer.flushCounters(); // this node's summed usage first (writer.ts counterFlushMs)
      return {
        status: 200,
        body: {
          id: caller.accountId,
          name: caller.accountName,
          created_at: iso(account?.createdAt),
          key: { id: caller.keyId, mode: caller.mode, scopes: caller.scopes },
          usage: { month, billable_messages: await usageFor(db, caller.accountId, month) },
        },
      };
    },
  });

  api.add({
    method: 'put', path: '/v1/settings/security', scope: 'account:manage', tag: 'Settings', liveOnly: true,
    summary: 'Set security settings',
    description: 'Replaces the IP allowlist. With a non-empty list, API requests and SMTP submissions from other addresses get 403 ip_not_allowed. ' +
      `${LIVE_ONLY} An operator clears a list that locked every key out with \`pigeon settings reset-allowlist --account NAME\`.`,
    body: securityBody,
    responses: { 200: { description: 'Saved settings', schema: securitySchema } },
    async handler({ body, caller }) {
      const { entries, faults } = parseAllowlist(body.allowed_ips);
      if (faults.length) {
        const details = faults.map((f) => ({ param: `allowed_ips[${f.index}]`, message: `'${f.value}' is ${f.message}` }));
        throw unprocessable('invalid_ip', details[0].message, details[0].param, details);
      }
      await settings.setAllowedIps(caller.accountId, entries);
      return { status: 200, body: { allowed_ips: entries, updated_at: iso(clock.now()) } };
    },
  });

  api.add({
    method: 'get', path: '/v1/settings/security', scope: 'account:manage', tag: 'Settings', extension: true,
    summary: 'Read security settings',
    responses: { 200: { description: 'Settings', schema: securitySchema } },
    async handler({ caller }) {
      return {
        status: 200,
        body: { allowed_ips: await settings.allowedIps(caller.accountId), updated_at: iso(await settings.updatedAt(caller.accountId)) },
      };
    },
  });
}
