/** Users as the API shows them (never the password hash). */
import { z } from 'zod';
import { iso } from '../clock';
import { getAccount } from '../auth/accounts';
import type { Queryable } from '../db';
import type { User } from './store';

export const userSchema = z.object({
  id: z.string(),
  email: z.string(),
  role: z.enum(['admin', 'member']),
  account: z.string().nullable().describe('member: their account; admin: their home account, if any.'),
  created_at: z.string(),
  disabled: z.boolean(),
  password_set: z.boolean().describe('false until the one-time set-password link was used.'),
});

export type UserView = z.infer<typeof userSchema>;

export async function shapeUser(db: Queryable, user: User): Promise<UserView> {
  const account = user.accountId ? await getAccount(db, user.accountId) : undefined;
  return {
    id: user.id,
    email: user.email,
    role: user.role,
    account: account?.name ?? null,
    created_at: iso(user.createdAt) as string,
    disabled: user.disabled,
    password_set: user.hasPassword,
  };
}
