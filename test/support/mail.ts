/*
 * Checks on a delivered message: its DKIM signatures verified by mailauth against
 * the test DNS server (exactly as a receiving MX would, key lookup included), and
 * its MIME structure parsed by mailparser. Also the DKIM key record for a public
 * key, so tests can publish the keys they sign with.
 */
import { Resolver } from 'node:dns/promises';
import type { KeyObject } from 'node:crypto';
import { simpleParser, type ParsedMail } from 'mailparser';

/** mailauth's DNS hook: answers shaped like dns.promises.resolve(name, rrtype). */
export type DnsResolveFn = (name: string, rrtype: string) => Promise<unknown>;

export interface DkimResult {
  /** 'pass', 'fail' (bad signature), 'neutral' (body hash mismatch, no key...), 'none' (unsigned), 'temperror', 'policy' */
  result: string;
  comment?: string;
  signingDomain?: string;
  selector?: string;
  /** e.g. 'rsa-sha256' */
  algo?: string;
  /** the Authentication-Results style line, e.g. 'dkim=pass header.i=@example.test ...' */
  info: string;
}

// mailauth ships no type declarations; these are the parts we use, typed at the boundary
interface MailauthDkimVerifyResult {
  results: Array<{ signingDomain?: string; selector?: string; algo?: string; info: string; status: { result: string; comment?: string } }>;
}
const { dkimVerify } = require('mailauth/lib/dkim/verify') as {
  dkimVerify(input: Buffer, options: { resolver: DnsResolveFn }): Promise<MailauthDkimVerifyResult>;
};

/** A resolver function backed by Node's resolver, pointed at the given test DNS server. */
export function resolverFor(dnsAddress: string): DnsResolveFn {
  const resolver = new Resolver({ timeout: 1000, tries: 1 });
  resolver.setServers([dnsAddress]);
  return (name, rrtype) => resolver.resolve(name, rrtype);
}

/**
 * One result per DKIM-Signature header (a single 'none' result for an unsigned
 * message). A changed body gives 'neutral' ("body hash did not verify"), a changed
 * signed header gives 'fail'.
 */
export async function verifyDkim(raw: Buffer, dnsAddress: string): Promise<DkimResult[]> {
  const { results } = await dkimVerify(raw, { resolver: resolverFor(dnsAddress) });
  return results.map((r) => ({
    result: r.status.result,
    comment: r.status.comment,
    signingDomain: r.signingDomain,
    selector: r.selector,
    algo: r.algo,
    info: r.info,
  }));
}

/**
 * The TXT record for <selector>._domainkey.<domain>, as character-strings of at
 * most 255 bytes (an RSA-2048 record does not fit in one). RSA keys are published
 * as SPKI DER, Ed25519 keys as the raw 32 bytes (RFC 8463).
 */
export function dkimTxtRecord(publicKey: KeyObject): string[] {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  const ed25519 = publicKey.asymmetricKeyType === 'ed25519';
  const p = (ed25519 ? der.subarray(-32) : der).toString('base64');
  const record = `v=DKIM1; k=${ed25519 ? 'ed25519' : 'rsa'}; p=${p}`;
  return record.match(/.{1,255}/g) ?? [];
}

export function parseMail(raw: Buffer): Promise<ParsedMail> {
  return simpleParser(raw);
}
