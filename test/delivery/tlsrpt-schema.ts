/*
 * The RFC 8460 aggregate report as a JSON Schema, written from the RFC's
 * §4.4 (report structure) with the value sets of §4.2 and §4.3: what a
 * receiver's parser may rely on. Fields the RFC marks optional are optional.
 */
// RFC 3339 date-time, as §4.4 asks (ajv knows no formats without a plugin).
const DATE_TIME = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$' } as const;

export const TLSRPT_SCHEMA = {
  type: 'object',
  required: ['organization-name', 'date-range', 'contact-info', 'report-id', 'policies'],
  properties: {
    'organization-name': { type: 'string', minLength: 1 },
    'date-range': {
      type: 'object',
      required: ['start-datetime', 'end-datetime'],
      properties: { 'start-datetime': DATE_TIME, 'end-datetime': DATE_TIME },
      additionalProperties: false,
    },
    'contact-info': { type: 'string', minLength: 1 },
    'report-id': { type: 'string', minLength: 1 },
    policies: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['policy', 'summary'],
        additionalProperties: false,
        properties: {
          policy: {
            type: 'object',
            required: ['policy-type', 'policy-domain'],
            additionalProperties: false,
            properties: {
              'policy-type': { enum: ['tlsa', 'sts', 'no-policy-found'] },
              'policy-string': { type: 'array', items: { type: 'string' } },
              'policy-domain': { type: 'string', minLength: 1 },
              'mx-host': { type: 'array', items: { type: 'string' } },
            },
          },
          summary: {
            type: 'object',
            required: ['total-successful-session-count', 'total-failure-session-count'],
            additionalProperties: false,
            properties: {
              'total-successful-session-count': { type: 'integer', minimum: 0 },
              'total-failure-session-count': { type: 'integer', minimum: 0 },
            },
          },
          'failure-details': {
            type: 'array',
            items: {
              type: 'object',
              required: ['result-type', 'failed-session-count'],
              additionalProperties: false,
              properties: {
                'result-type': {
                  enum: [
                    'starttls-not-supported', 'certificate-host-mismatch', 'certificate-expired', 'certificate-not-trusted', 'validation-failure',
                    'tlsa-invalid', 'dnssec-invalid', 'dane-required', 'sts-policy-fetch-error', 'sts-policy-invalid', 'sts-webpki-invalid',
                  ],
                },
                'sending-mta-ip': { type: 'string', pattern: '^[0-9a-fA-F:.]+$' },
                'receiving-mx-hostname': { type: 'string' },
                'receiving-mx-helo': { type: 'string' },
                'receiving-ip': { type: 'string' },
                'failed-session-count': { type: 'integer', minimum: 1 },
                'additional-information': { type: 'string' },
                'failure-reason-code': { type: 'string' },
              },
            },
          },
        },
      },
    },
  },
} as const;
