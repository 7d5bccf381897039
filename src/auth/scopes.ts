/**
 * Key scopes. The first seven are SPEC.md's; `suppressions:manage` and
 * `account:manage` are Pigeon extensions (suppression list, keys and security
 * settings) and are documented as such.
 */
export const SCOPES = [
  'messages:send',
  'messages:read',
  'domains:manage',
  'webhooks:manage',
  'ip-pools:manage',
  'analytics:read',
  'account:read',
  'suppressions:manage',
  'account:manage',
] as const;

export type Scope = (typeof SCOPES)[number];
export type Mode = 'test' | 'live';

export const KEY_PREFIX: Record<Mode, string> = { test: 'svc_test_', live: 'svc_live_' };

export function isScope(v: string): v is Scope {
  return (SCOPES as readonly string[]).includes(v);
}
