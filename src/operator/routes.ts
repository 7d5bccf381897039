/**
 * Operator routes: the whole appliance as an admin sees it from the console.
 * Each is `operatorOnly`, so only an admin's session reaches it (403
 * operator_only for members and for every API key, whatever its scopes).
 * Users and warm-up go through the same functions as `pigeon users` and
 * `pigeon pools warmup`; the doctor runs `pigeon doctor`'s checks.
 */
import { z } from 'zod';
import type { AppDeps } from '../deps';
import type { ApiRouter } from '../http/api';
import { conflict, notFound } from '../http/errors';
import { CHECKS } from '../cli/doctor';
import { addUser } from '../users/service';
import { shapeUser, userSchema } from '../users/shape';
import { deleteUser, getUser, listUsers, ROLES } from '../users/store';
import { accountsOverview, ACCOUNTS_MAX } from './accounts';
import { registerOperatorQueueRoutes } from './queue-routes';
import { registerOperatorWarmupRoutes } from './warmup-routes';
import { OPERATOR, OPERATOR_NOTE } from './spec';


export function registerOperatorRoutes(api: ApiRouter, deps: AppDeps): void {
  const { db, reader, clock, config } = deps;

  api.add({
    ...OPERATOR, method: 'get', path: '/v1/operator/accounts', summary: 'Every account',
    description: `Each account (at most ${ACCOUNTS_MAX}, by name) with this month's billable messages and today's live messages sent. ${OPERATOR_NOTE}`,
    responses: {
      200: {
        description: 'Accounts',
        schema: z.object({ data: z.array(z.object({
          name: z.string(), created_at: z.string(),
          usage: z.object({ month: z.string(), billable_messages: z.number().int() }), messages_today: z.number().int(),
        })) }),
      },
    },
    async handler() {
      await deps.writer.flushCounters(); // this node's summed counts first (writer.ts counterFlushMs)
      return { status: 200, body: { data: await accountsOverview(reader, clock.now()) } };
    },
  });

  api.add({
    ...OPERATOR, method: 'get', path: '/v1/operator/users', summary: 'Console users', description: OPERATOR_NOTE,
    responses: { 200: { description: 'Users', schema: z.object({ data: z.array(userSchema) }) } },
    async handler() {
      const users = await listUsers(db);
      return { status: 200, body: { data: await Promise.all(users.map((u) => shapeUser(db, u))) } };
    },
  });

  api.add({
    ...OPERATOR, method: 'post', path: '/v1/operator/users', summary: 'Create a console user',
    description: 'Makes the user and a one-time link to set their password (24 h). A member needs `account`; for an admin it is a home account. ' +
      `409 user_exists for a taken email. ${OPERATOR_NOTE}`,
    body: z.strictObject({
      email: z.email().max(254), role: z.enum(ROLES as [string, ...string[]]), account: z.string().min(1).max(200).optional(),
    }),
    responses: { 201: { description: 'Created', schema: z.object({ user: userSchema, set_password_url: z.string() }) } },
    async handler({ body }) {
      const { user, setPasswordUrl } = await addUser(db, { email: body.email, role: body.role as 'admin' | 'member', account: body.account }, clock.now(), config.http.publicUrl);
      return { status: 201, body: { user: await shapeUser(db, user), set_password_url: setPasswordUrl } };
    },
  });

  api.add({
    ...OPERATOR, method: 'delete', path: '/v1/operator/users/{id}', summary: 'Delete a console user',
    description: `Deletes the user and ends their sessions. An admin cannot delete themselves (409 cannot_delete_self). ${OPERATOR_NOTE}`,
    params: z.object({ id: z.string().max(64) }),
    responses: { 204: { description: 'Deleted' } },
    async handler({ params, caller }) {
      if (params.id === caller.user?.id) throw conflict('cannot_delete_self', 'an admin cannot delete their own user; another admin or the CLI can');
      if (!(await getUser(db, params.id)) || !(await deleteUser(db, params.id))) throw notFound('user', 'id');
      return { status: 204 };
    },
  });

  api.add({
    ...OPERATOR, method: 'get', path: '/v1/operator/doctor', summary: 'Run the doctor checks',
    description: `The checks of \`pigeon doctor\` (database, ports, PTR, source addresses, webhooks, TLS), run now. ${OPERATOR_NOTE}`,
    responses: {
      200: {
        description: 'Checks',
        schema: z.object({ checks: z.array(z.object({ name: z.string(), ok: z.boolean(), status: z.enum(['ok', 'warn', 'fail']), detail: z.string() })) }),
      },
    },
    async handler() {
      const results = (await Promise.all(CHECKS.map((check) => check(config)))).flat();
      return { status: 200, body: { checks: results.map((r) => ({ name: r.name, ok: r.status === 'ok', status: r.status, detail: r.detail })) } };
    },
  });

  registerOperatorQueueRoutes(api, deps);
  registerOperatorWarmupRoutes(api, deps);
}
