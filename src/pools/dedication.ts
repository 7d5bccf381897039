/**
 * Dedicated and shared source addresses. An address with config
 * `ips[].account` belongs to that one account: only that account sends from
 * it, sees it in its `default` pool, may put it in a pool, and manages its
 * warm-up through the API. Every other address is shared by all accounts;
 * its warm-up caps everyone's mail, so it is the operator's (`pigeon pools
 * warmup`), never one tenant's.
 */
import type { Config } from '../config';
import type { Queryable } from '../db';
import { getAccount } from '../auth/accounts';
import { ApiError } from '../http/errors';

export type SourceIp = Config['ips'][number];

export const isShared = (ip: SourceIp): boolean => ip.account === undefined;

/** The configured addresses this account may send from, in config order: the shared ones and those dedicated to it. */
export async function usableIps(db: Queryable, config: Pick<Config, 'ips'>, accountId: string): Promise<SourceIp[]> {
  // Most appliances dedicate nothing: no database read on the delivery path then.
  if (config.ips.every(isShared)) return config.ips;
  const name = (await getAccount(db, accountId))?.name;
  return config.ips.filter((ip) => isShared(ip) || ip.account === name);
}

/** 403 for a warm-up request through the API that names (or implies) a shared address. */
export function operatorManaged(address: string, param?: string): ApiError {
  return new ApiError(
    403,
    'permission_error',
    'operator_managed',
    `${address} is shared by every account, so its warm-up caps everyone's mail and is managed by the operator ` +
      `(pigeon pools warmup start|pause|resume|stop --ips ${address}); through the API an account manages only the ` +
      'warm-up of addresses dedicated to it (config ips[].account)',
    param,
  );
}
