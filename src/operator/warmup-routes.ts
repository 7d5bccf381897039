/** Warm-up of a pool's addresses from the console, as `pigeon pools warmup` does it from the shell. */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { notFound } from '../http/errors';
import { poolExists, poolMembers } from '../pools/lookup';
import { ipStatuses } from '../pools/status';
import { shapeIp } from '../pools/view';
import { changeWarmupOn, scheduleSchema, startWarmupOn } from '../pools/warmup';
import { OPERATOR, OPERATOR_NOTE } from './spec';

export function registerOperatorWarmupRoutes(api: ApiRouter, deps: AppDeps): void {
  const { db, clock, config } = deps;

  api.add({
    ...OPERATOR, method: 'post', path: '/v1/operator/ip-pools/{name}/warmup/{action}', summary: 'Warm-up of a pool\'s addresses',
    description: 'start (optionally with `schedule`: "standard" or daily caps), pause, resume or stop the warm-up of every address of the pool ' +
      '(of the account in X-Pigeon-Account; `default` is every address that account sends from), shared addresses included: ' +
      `the same as \`pigeon pools warmup … --ips\`. Send a JSON body, \`{}\` at least. ${OPERATOR_NOTE}`,
    params: z.object({ name: z.string().min(1).max(100), action: z.enum(['start', 'pause', 'resume', 'stop']) }),
    body: z.strictObject({ schedule: scheduleSchema.optional().describe('start only: "standard" or 1 to 365 daily caps.') }),
    responses: { 200: { description: 'The addresses with their warm-up state', schema: z.object({ data: z.array(z.record(z.string(), z.unknown())) }) } },
    async handler({ params, body, caller }) {
      if (!(await poolExists(db, caller.accountId, params.name))) throw notFound('IP pool', 'name');
      const members = await poolMembers(db, config, caller.accountId, params.name);
      const addresses = members.map((m) => m.address);
      if (params.action === 'start') await startWarmupOn({ db, clock }, addresses, body.schedule);
      else await changeWarmupOn({ db, clock }, addresses, params.action, false, 'no address of this pool is in warm-up');
      const statuses = await ipStatuses(db, config, addresses, clock.now());
      const data = members.map((m) => shapeIp(config, { address: m.address, hostname: m.hostname, weight: m.weight, configured: true, status: statuses.get(m.address)! }));
      return { status: 200, body: { data } };
    },
  });
}
