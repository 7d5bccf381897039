/**
 * Creating console users, shared by `pigeon users create` and the operator
 * API: with a password (hashed here) or, without one, a single-use link to
 * set it.
 */
import type { Db } from '../db';
import { findAccountByName } from '../auth/accounts';
import { unprocessable } from '../http/errors';
import { hashPassword, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './passwords';
import { createUser, issuePasswordToken, Role, setPasswordUrl, User } from './store';

export interface NewUser {
  email: string;
  role: Role;
  /** Account name: required for a member, a home account for an admin. */
  account?: string;
  password?: string;
}

export function checkPasswordStrength(password: string): void {
  if (password.length < PASSWORD_MIN_LENGTH) throw unprocessable('password_too_short', `a password has at least ${PASSWORD_MIN_LENGTH} characters`, 'password');
  if (password.length > PASSWORD_MAX_LENGTH) throw unprocessable('password_too_long', `a password has at most ${PASSWORD_MAX_LENGTH} characters`, 'password');
}

export async function addUser(db: Db, input: NewUser, now: number, publicUrl: string): Promise<{ user: User; setPasswordUrl: string | null }> {
  if (input.password !== undefined) checkPasswordStrength(input.password);
  const account = input.account ? await findAccountByName(db, input.account) : undefined;
  if (input.account && !account) throw unprocessable('account_not_found', `no account named '${input.account}'`, 'account');
  const passwordHash = input.password !== undefined ? await hashPassword(input.password) : null;
  return db.transaction(async (trx) => {
    const user = await createUser(trx, { email: input.email, role: input.role, accountId: account?.id ?? null, passwordHash }, now);
    if (passwordHash) return { user, setPasswordUrl: null };
    return { user, setPasswordUrl: setPasswordUrl(publicUrl, await issuePasswordToken(trx, user.id, now)) };
  });
}
