/**
 * The OpenAPI 3.1 document, generated from the same zod schemas that validate
 * requests (zod's JSON Schema output is draft 2020-12, which OpenAPI 3.1 uses).
 */
import { z } from 'zod';
import type { AnyRoute } from './api';
import { EVENT_TYPES, envelopeSchema, isExtensionEvent } from '../events/schemas';

const errorSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['type', 'code', 'message', 'request_id'],
      properties: {
        type: { type: 'string', enum: ['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'conflict_error', 'rate_limit_error', 'api_error'] },
        code: { type: 'string', examples: ['validation_failed', 'insufficient_scope'] },
        message: { type: 'string' },
        param: { type: 'string', description: 'Path of the offending field, e.g. to[3].email' },
        details: { type: 'array', items: { type: 'object', properties: { param: { type: 'string' }, message: { type: 'string' } } } },
        request_id: { type: 'string' },
      },
    },
  },
};

const STANDARD_ERRORS: Record<string, string> = {
  '400': 'Malformed request or query parameter',
  '401': 'Missing, malformed, unknown or revoked API key',
  '403': 'Missing scope or address not in the IP allowlist',
  '429': 'Rate limited; see Retry-After',
};

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

function parameters(route: AnyRoute): unknown[] {
  const list: unknown[] = [];
  for (const [where, schema] of [['path', route.params], ['query', route.query]] as const) {
    if (!schema) continue;
    const json = jsonSchema(schema, 'input') as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
    for (const [name, prop] of Object.entries(json.properties ?? {})) {
      list.push({ name, in: where, required: where === 'path' || (json.required ?? []).includes(name), description: prop.description, schema: prop });
    }
  }
  for (const match of route.path.matchAll(/\{(\w+)\}/g)) {
    if (!list.some((p) => (p as { name: string }).name === match[1])) {
      list.push({ name: match[1], in: 'path', required: true, schema: { type: 'string' } });
    }
  }
  return list;
}

function operation(route: AnyRoute): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const [status, spec] of Object.entries(route.responses)) {
    responses[status] = {
      description: spec.description,
      ...(spec.schema ? { content: { [spec.contentType ?? 'application/json']: { schema: jsonSchema(spec.schema, 'output') } } } : {}),
    };
  }
  const errors = route.scope ? STANDARD_ERRORS : { '400': STANDARD_ERRORS['400'] };
  for (const [status, description] of Object.entries(errors)) {
    responses[status] ??= { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  }
  if (route.body) {
    responses['422'] ??= { description: 'Validation failed', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  }
  return {
    operationId: `${route.method}${route.path.replace(/[{}]/g, '').replace(/[/-](\w)/g, (_, c: string) => c.toUpperCase())}`,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: [route.tag],
    ...(route.scope ? { security: route.operatorOnly ? [{ sessionCookie: [] }] : [{ bearerAuth: [] }, { sessionCookie: [] }], 'x-required-scope': route.scope } : { security: [] }),
    ...(route.extension ? { 'x-pigeon-extension': true } : {}),
    ...(route.liveOnly ? { 'x-pigeon-live-key-required': true } : {}),
    ...(route.operatorOnly ? { 'x-pigeon-operator-only': true } : {}),
    parameters: parameters(route),
    ...(route.body
      ? { requestBody: { required: true, content: { [route.bodyType === 'multipart' ? 'multipart/form-data' : 'application/json']: { schema: jsonSchema(route.body, 'input') } } } }
      : {}),
    responses,
  };
}

export function buildOpenApi(routes: AnyRoute[], publicUrl: string, version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    (paths[route.path] ??= {})[route.method] = operation(route);
  }
  const webhooks: Record<string, unknown> = {};
  for (const type of EVENT_TYPES) {
    webhooks[type] = {
      post: {
        summary: `${type} event${isExtensionEvent(type) ? ' (extension)' : ''}`,
        ...(isExtensionEvent(type) ? { 'x-pigeon-extension': true } : {}),
        parameters: [
          { name: 'Service-Signature', in: 'header', required: true, schema: { type: 'string' }, description: 't=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>' },
          { name: 'Service-Event-Id', in: 'header', required: true, schema: { type: 'string' } },
          { name: 'Service-Delivery-Attempt', in: 'header', required: true, schema: { type: 'integer' } },
        ],
        requestBody: { content: { 'application/json': { schema: jsonSchema(envelopeSchema(type), 'output') } } },
        responses: { '2XX': { description: 'Received; any other answer or no answer within 10 s is retried after 5 min, 30 min, 2 h, 8 h and 24 h.' } },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Pigeon API', version, description: 'Self-hosted transactional email: send, track and manage mail delivery.' },
    servers: [{ url: publicUrl }],
    security: [{ bearerAuth: [] }],
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'svc_test_… (sandbox) or svc_live_… (production) API key' },
        sessionCookie: {
          type: 'apiKey', in: 'cookie', name: 'pigeon_session',
          description: 'A console session (POST /v1/session): acts as a live key with every scope for one account (X-Pigeon-Account), or as a sandbox key with X-Pigeon-Mode: test; requests other than GET/HEAD also need X-CSRF-Token. Not accepted by the compatibility layers.',
        },
      },
      schemas: { Error: errorSchema },
    },
    paths,
    webhooks,
  };
}
