/**
 * Keep-alive connections to webhook receivers, without weakening the SSRF
 * guard. An agent is kept per (scheme, host, port, checked address, CA
 * setting): every socket of an agent was opened to the one address the guard
 * approved, so a pooled socket is never reused for a name that now resolves
 * elsewhere — the guard runs before every attempt (attempt.ts), and a new
 * answer means a new agent with new connections. Agents are bounded (least
 * recently used idle ones are destroyed), idle sockets are few and close
 * after IDLE_MS, shorter than the 5 s keep-alive timeout of common servers
 * (node, nginx's 75 s is longer), so we rarely send on a socket the receiver
 * is closing.
 */
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { TargetCheck } from './ssrf';

export const IDLE_MS = 4_000;

export interface AgentOptions {
  /** sockets per agent; the dispatcher's own limits decide how many requests run, so none wait here */
  maxSockets: number;
  /** idle sockets kept per agent */
  maxFreeSockets: number;
  /** agents kept; idle ones beyond this are destroyed, least recently used first */
  maxAgents: number;
}

/** A lookup that answers with the checked address only: the client never resolves the name itself. */
export function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as LookupFunction;
}

interface Entry {
  agent: http.Agent;
  active: number;
}

export class EndpointAgents {
  /** insertion order is recency: a used entry is moved to the end */
  private readonly agents = new Map<string, Entry>();

  constructor(private readonly options: AgentOptions) {}

  /** The agent for this checked target; call release() when its request is over. */
  acquire(target: TargetCheck, caSetting: string): { agent: http.Agent; release(): void } {
    const key = [target.url.protocol, target.host, target.url.port, target.address, caSetting].join('|');
    let entry = this.agents.get(key);
    if (entry) this.agents.delete(key);
    else entry = { agent: this.create(target), active: 0 };
    this.agents.set(key, entry);
    entry.active++;
    this.evict();
    const held = entry;
    let released = false;
    return {
      agent: held.agent,
      release: () => {
        if (released) return;
        released = true;
        held.active--;
      },
    };
  }

  get size(): number {
    return this.agents.size;
  }

  destroy(): void {
    for (const { agent } of this.agents.values()) agent.destroy();
    this.agents.clear();
  }

  private create(target: TargetCheck): http.Agent {
    const Agent = target.url.protocol === 'https:' ? https.Agent : http.Agent;
    return new Agent({
      keepAlive: true,
      maxSockets: this.options.maxSockets,
      maxFreeSockets: this.options.maxFreeSockets,
      timeout: IDLE_MS, // node destroys a free socket when it times out
      lookup: pinnedLookup(target.address, target.family),
    } as https.AgentOptions);
  }

  /** Destroys least recently used agents with no request running until the bound holds. */
  private evict(): void {
    for (const [key, entry] of this.agents) {
      if (this.agents.size <= this.options.maxAgents) return;
      if (entry.active > 0) continue;
      entry.agent.destroy();
      this.agents.delete(key);
    }
  }
}
