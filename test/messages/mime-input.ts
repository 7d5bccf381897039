/** A minimal send for the MIME builder's tests: one sender, one recipient, no body yet. */
import type { MimeInput } from '../../src/messages/mime';

export const mimeInput: MimeInput = {
  from: { email: 'app@example.test', name: null, domain: 'example.test' },
  to: [{ email: 'user@example.test', name: null, domain: 'example.test' }],
  cc: [],
  replyTo: [],
  subject: 'Hello',
  headers: [],
  attachments: [],
  messageId: 'msg_1@mta.example.test',
  date: Date.UTC(2026, 0, 1),
};
