/** Routes of the IP pools module: parse → service → shape. */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { pageSchema, paginationQuery, toPage } from '../http/pagination';
import { ipRuntimeFor } from './runtime';
import type { WarmupAction } from './warmup';
import { changeWarmup, createPool, deletePool, getPool, listPools, startWarmup, updatePool, type PoolsContext } from './service';
import { poolSchema, shapePool } from './view';
import { scheduleSchema } from './warmup';

const poolName = z.string().regex(/^[a-z0-9-]{1,64}$/, 'must be 1 to 64 lower-case letters, digits or hyphens');
const ipList = z.array(z.string().max(100)).min(1).max(1000);
const overflow = z.union([z.literal('queue'), poolName])
  .describe('`queue` (default): mail over the cap waits in the queue, not counted as an attempt; or the name of another pool of the account that sends it instead.');

const createBody = z.strictObject({
  name: poolName.describe('Unique per account. `default` is taken by the pool of every configured IP.'),
  ips: ipList.describe('Source addresses of the pool; each must be one of config `ips` that the account may use (shared, or dedicated to it by `ips[].account`). An address may be in several pools.'),
});

const patchBody = z.strictObject({
  name: poolName.optional().describe('New name (not for `default`; 409 while messages waiting in the queue name the pool).'),
  ips: ipList.optional().describe('Replaces the pool\'s addresses (not for `default`).'),
  overflow: overflow.optional(),
}).refine((b) => b.name !== undefined || b.ips !== undefined || b.overflow !== undefined, { message: 'give at least one of name, ips, overflow' });

const warmupBody = z.strictObject({
  ips: ipList.optional().describe('Warm up only these addresses of the pool (default: all of them). Each must be dedicated to the account (config `ips[].account`); 403 operator_managed names the first shared one.'),
  schedule: scheduleSchema.optional()
    .describe('`standard` (default: 50 a day, roughly doubling to unlimited after 30 days) or daily caps, one per day of actual sending; after the last day the IP is warm.'),
  overflow: overflow.optional(),
});

const ipsBody = z.strictObject({ ips: ipList.optional().describe('Only these addresses of the pool (default: every address of the pool in warm-up). Each must be dedicated to the account; 403 operator_managed names the first shared one.') });

const nameParam = z.object({ name: z.string().max(64).describe('The pool name (`default` for the pool of every address the account may use).') });

const WHO_WARMS_UP = 'Warm-up state belongs to the IP, so only addresses dedicated to the account (config `ips[].account`) can be managed here, with a live key: '
  + 'a request that names or implies a shared address is refused whole with 403 operator_managed naming it (the operator manages shared addresses with `pigeon pools warmup`); '
  + 'a sandbox key gets 403 live_key_required.';

const deletedSchema = z.object({ name: z.string(), deleted: z.literal(true) });

export function registerPoolRoutes(api: ApiRouter, deps: AppDeps): void {
  const ctx: PoolsContext = { db: deps.db, config: deps.config, clock: deps.clock, log: deps.log, runtime: ipRuntimeFor(deps) };
  const shape = (p: Parameters<typeof shapePool>[1]) => shapePool(deps.config, p);
  const tag = 'IP pools';
  const scope = 'ip-pools:manage' as const;
  const one = { 200: { description: 'The pool with the state of each IP', schema: poolSchema } };

  api.add({
    method: 'post', path: '/v1/ip-pools', scope, tag, liveOnly: true, summary: 'Create an IP pool',
    description: 'A named set of the source addresses the account may use (shared ones, and those dedicated to it by config `ips[].account`). 422 unknown_ip names `ips[i]` (not configured, or dedicated to another account); 409 pool_exists. Live keys only (403 live_key_required).',
    body: createBody,
    responses: { 201: { description: 'The new pool', schema: poolSchema } },
    async handler({ body, caller }) {
      return { status: 201, body: shape(await createPool(ctx, caller.accountId, body)) };
    },
  });

  api.add({
    method: 'get', path: '/v1/ip-pools', scope, tag, summary: 'List IP pools',
    description: 'Newest first; the `default` pool (every shared address and those dedicated to the account) heads the first page. Each IP shows its hostname, warm-up state, today\'s counts per provider and cool-downs.',
    query: z.object(paginationQuery),
    responses: { 200: { description: 'A page of pools', schema: pageSchema(poolSchema) } },
    async handler({ query, caller }) {
      const page = await listPools(ctx, caller.accountId, query.limit + 1, query.cursor);
      return { status: 200, body: toPage(page.items, query.limit, page.total, (p) => p.id, shape) };
    },
  });

  api.add({
    method: 'get', path: '/v1/ip-pools/{name}', scope, tag, extension: true, summary: 'Get an IP pool',
    params: nameParam, responses: one,
    async handler({ params, caller }) {
      return { status: 200, body: shape(await getPool(ctx, caller.accountId, params.name)) };
    },
  });

  api.add({
    method: 'patch', path: '/v1/ip-pools/{name}', scope, tag, extension: true, liveOnly: true, summary: 'Change an IP pool',
    description: 'Rename, replace the addresses, or set the overflow. `default` takes only overflow (409 default_pool). Live keys only (403 live_key_required).',
    params: nameParam, body: patchBody, responses: one,
    async handler({ params, body, caller }) {
      return { status: 200, body: shape(await updatePool(ctx, caller.accountId, params.name, body)) };
    },
  });

  api.add({
    method: 'delete', path: '/v1/ip-pools/{name}', scope, tag, extension: true, liveOnly: true, summary: 'Delete an IP pool',
    description: '409 pool_in_use while scheduled or queued messages name it or another pool overflows into it; 409 default_pool for `default`. The IPs\' warm-up state stays (it belongs to the IPs). Live keys only (403 live_key_required).',
    params: nameParam,
    responses: { 200: { description: 'Deleted', schema: deletedSchema } },
    async handler({ params, caller }) {
      await deletePool(ctx, caller.accountId, params.name);
      return { status: 200, body: { name: params.name, deleted: true } };
    },
  });

  api.add({
    method: 'post', path: '/v1/ip-pools/{name}/warmup', scope, tag, liveOnly: true, summary: 'Start IP warm-up',
    description: `Caps every IP of the pool (or \`ips\`) by its schedule, per UTC day of actual sending, spread over the hours, with per-provider shares. An IP already warming gets the new schedule and keeps its day. ${WHO_WARMS_UP}`,
    params: nameParam, body: warmupBody, responses: one,
    async handler({ params, body, caller }) {
      return { status: 200, body: shape(await startWarmup(ctx, caller.accountId, params.name, body)) };
    },
  });

  const actions: Array<[WarmupAction, string, string]> = [
    ['pause', 'Pause IP warm-up', 'Holds the IPs at their current day: the cap still applies, days do not advance. 409 not_warming.'],
    ['resume', 'Resume IP warm-up', 'Days advance again from the current one. 409 not_warming.'],
    ['stop', 'Stop IP warm-up', 'Marks the IPs warm: no cap from now on. 409 not_warming.'],
  ];
  for (const [action, summary, description] of actions) {
    api.add({
      method: 'post', path: `/v1/ip-pools/{name}/warmup/${action}`, scope, tag, extension: true, liveOnly: true, summary,
      description: `${description} ${WHO_WARMS_UP}`,
      params: nameParam, body: ipsBody, responses: one,
      async handler({ params, body, caller }) {
        return { status: 200, body: shape(await changeWarmup(ctx, caller.accountId, params.name, action, body.ips)) };
      },
    });
  }
}
