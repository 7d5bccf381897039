/**
 * Every endpoint of SPEC.md with its scope. Endpoints no module has built yet
 * are still registered: authenticated and scope-checked, they answer 501 in the
 * error shape, and they appear in the OpenAPI document from day one.
 */
import type { Scope } from '../auth/scopes';
import type { Method } from './api';

export const SPEC_ROUTES: Array<{ method: Method; path: string; scope: Scope; tag: string; summary: string }> = [
  { method: 'post', path: '/v1/messages/send', scope: 'messages:send', tag: 'Messages', summary: 'Send a transactional email' },
  { method: 'get', path: '/v1/messages/{id}', scope: 'messages:read', tag: 'Messages', summary: 'Get message status' },
  { method: 'get', path: '/v1/messages', scope: 'messages:read', tag: 'Messages', summary: 'List messages' },
  { method: 'delete', path: '/v1/messages/{id}', scope: 'messages:send', tag: 'Messages', summary: 'Cancel a scheduled message' },
  { method: 'post', path: '/v1/domains', scope: 'domains:manage', tag: 'Domains', summary: 'Add a sending domain' },
  { method: 'get', path: '/v1/domains', scope: 'domains:manage', tag: 'Domains', summary: 'List domains' },
  { method: 'delete', path: '/v1/domains/{domain}', scope: 'domains:manage', tag: 'Domains', summary: 'Delete a domain' },
  { method: 'post', path: '/v1/domains/{domain}/verify', scope: 'domains:manage', tag: 'Domains', summary: 'Verify DNS records' },
  { method: 'post', path: '/v1/webhooks', scope: 'webhooks:manage', tag: 'Webhooks', summary: 'Create a webhook' },
  { method: 'get', path: '/v1/webhooks', scope: 'webhooks:manage', tag: 'Webhooks', summary: 'List webhooks' },
  { method: 'delete', path: '/v1/webhooks/{id}', scope: 'webhooks:manage', tag: 'Webhooks', summary: 'Delete a webhook' },
  { method: 'post', path: '/v1/webhooks/{id}/test', scope: 'webhooks:manage', tag: 'Webhooks', summary: 'Send a test event' },
  { method: 'post', path: '/v1/ip-pools', scope: 'ip-pools:manage', tag: 'IP pools', summary: 'Create an IP pool' },
  { method: 'get', path: '/v1/ip-pools', scope: 'ip-pools:manage', tag: 'IP pools', summary: 'List IP pools' },
  { method: 'post', path: '/v1/ip-pools/{name}/warmup', scope: 'ip-pools:manage', tag: 'IP pools', summary: 'Start IP warm-up' },
  { method: 'get', path: '/v1/analytics/stats', scope: 'analytics:read', tag: 'Analytics', summary: 'Overall stats' },
  { method: 'get', path: '/v1/analytics/timeseries', scope: 'analytics:read', tag: 'Analytics', summary: 'Time-series data' },
  { method: 'get', path: '/v1/analytics/breakdown/domains', scope: 'analytics:read', tag: 'Analytics', summary: 'Breakdown by recipient domain' },
  { method: 'get', path: '/v1/analytics/export', scope: 'analytics:read', tag: 'Analytics', summary: 'Export data' },
  { method: 'put', path: '/v1/settings/security', scope: 'account:manage', tag: 'Settings', summary: 'Set security settings' },
  { method: 'post', path: '/v1/suppressions/upload', scope: 'suppressions:manage', tag: 'Suppressions', summary: 'Upload a suppression list' },
];
