/**
 * `pigeon users create|list|delete`: console users. `create` reads the
 * password from stdin when it is piped (`echo … | pigeon users create …`);
 * from a terminal it prints a one-time set-password link instead, so a
 * password never sits in shell history.
 */
import { iso } from '../clock';
import { getAccount } from '../auth/accounts';
import { ApiError } from '../http/errors';
import { addUser } from '../users/service';
import { deleteUser, findUserByEmail, listUsers, Role, ROLES } from '../users/store';
import { CliContext, UsageError, flagString, withDb } from './common';

/** A piped password is one line; more than this is not a password. */
const STDIN_MAX_BYTES = 4096;

export async function usersCommand(ctx: CliContext): Promise<void> {
  const [action] = ctx.args;
  if (action === 'create') return createUserCommand(ctx);
  if (action === 'list') return listUsersCommand(ctx);
  if (action === 'delete') return deleteUserCommand(ctx);
  throw new UsageError('usage: pigeon users create|list|delete');
}

async function createUserCommand(ctx: CliContext): Promise<void> {
  const email = flagString(ctx, 'email');
  const role = flagString(ctx, 'role');
  if (!email || !role || !ROLES.includes(role as Role)) throw new UsageError('usage: pigeon users create --email E --role admin|member [--account NAME]');
  const password = process.stdin.isTTY ? undefined : await readPipedPassword();
  const { user, setPasswordUrl } = await withDb(ctx.config, (db) =>
    addUser(db, { email, role: role as Role, account: flagString(ctx, 'account'), password }, Date.now(), ctx.config.http.publicUrl),
  ).catch(usageOf);
  if (ctx.flags.json) {
    ctx.out(JSON.stringify({ id: user.id, email: user.email, role: user.role, set_password_url: setPasswordUrl }));
    return;
  }
  ctx.out(`created ${user.role} ${user.email} (${user.id})`);
  if (setPasswordUrl) ctx.out(`set the password within 24 hours, once, at: ${setPasswordUrl}`);
}

async function listUsersCommand(ctx: CliContext): Promise<void> {
  const rows = await withDb(ctx.config, async (db) => {
    const users = await listUsers(db);
    return Promise.all(users.map(async (u) => ({ user: u, account: u.accountId ? (await getAccount(db, u.accountId))?.name ?? null : null })));
  });
  if (ctx.flags.json) {
    ctx.out(JSON.stringify(rows.map(({ user, account }) => ({ id: user.id, email: user.email, role: user.role, account, created_at: iso(user.createdAt), password_set: user.hasPassword }))));
    return;
  }
  for (const { user, account } of rows) ctx.out([user.id, user.email, user.role, account ?? '-', user.hasPassword ? 'active' : 'password not set'].join('\t'));
}

async function deleteUserCommand(ctx: CliContext): Promise<void> {
  const email = flagString(ctx, 'email');
  if (!email) throw new UsageError('usage: pigeon users delete --email E');
  const deleted = await withDb(ctx.config, async (db) => {
    const user = await findUserByEmail(db, email);
    return user ? deleteUser(db, user.id) : false;
  });
  if (!deleted) throw new UsageError(`no user with email ${email}`);
  ctx.out(`deleted ${email}`);
}

/** The first line of stdin, without its line ending; undefined when nothing was piped. */
async function readPipedPassword(): Promise<string | undefined> {
  let text = '';
  for await (const chunk of process.stdin) {
    text += String(chunk);
    if (text.length > STDIN_MAX_BYTES) throw new UsageError('stdin is too long to be a password');
  }
  return text ? text.split(/\r?\n/)[0] : undefined;
}

/** Validation faults (short password, unknown account, taken email) are usage errors on the command line. */
function usageOf(err: unknown): never {
  if (err instanceof ApiError && err.status < 500) throw new UsageError(err.message);
  throw err;
}
