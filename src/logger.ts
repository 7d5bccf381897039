/**
 * Structured JSON logs (pino). Secrets never reach a log line: API keys,
 * Authorization headers, passwords, webhook secrets and private keys are
 * redacted by path, and code logs ids, never key material.
 */
import pino, { Logger, DestinationStream } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'authorization',
  'req.headers.authorization',
  'headers.authorization',
  'apiKey',
  '*.apiKey',
  'key',
  '*.key',
  'password',
  '*.password',
  'secret',
  '*.secret',
  'privateKey',
  '*.privateKey',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'pigeon' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ fd: 1, sync: false }),
  );
}
