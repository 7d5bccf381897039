/**
 * One elected node for the background work that must not run twice when
 * several nodes share one PostgreSQL database (domain re-checks, the
 * reputation watch, TLS reports, pruning old IP counters; docs/postgres.md
 * "Who is elected"). Claim-safe work (the MTA, the webhook dispatcher) runs
 * on every node and is not wrapped.
 *
 * The election is one session-level advisory lock, LEADER_LOCK_KEY, taken
 * with pg_try_advisory_lock on a connection of its own (not from the pool, so
 * the lock lives exactly as long as that session). A node that does not hold
 * it tries again every `node.electionRetryMs`; the leader checks its session
 * just as often, and when the session fails (server restart, network) it
 * stops its singletons at once and competes again: PostgreSQL dropped the
 * lock with the session, so another node may already hold it. One lock for
 * all singletons: one extra connection per node, and the background work is
 * light (the heavy work, sending, is claimed on every node).
 *
 * On SQLite there is one node per database: the process is always the leader.
 */
import os from 'node:os';
import pg from 'pg';
import type { AppDeps } from '../deps';
import type { Worker } from '../modules';
import { isPostgres } from './index';
import { postgresUrl } from './postgres';

/** 'pigeon' in ASCII, as a bigint: the advisory lock every node of one database competes for. */
export const LEADER_LOCK_KEY = '123598008577902';
/** Connecting and trying the lock give up after this long (or the retry interval, if longer). */
const CONNECT_LIMIT_MS = 10_000;
/** The leader's session check gives up after its interval, but never sooner than this. */
const CHECK_LIMIT_MIN_MS = 1_000;

/** A background worker that runs only on the elected node (see `singleton`). */
class Singleton implements Worker {
  readonly name: string;
  private current: Worker;
  private fresh = true;
  private wanted = false;
  private active: Worker | undefined;
  private stopping: Promise<void> = Promise.resolve();

  constructor(
    private readonly leader: Leader,
    private readonly make: () => Worker,
  ) {
    this.current = make();
    this.name = this.current.name;
  }

  start(): void {
    this.wanted = true;
    if (this.leader.leading) this.lead();
  }

  stop(): Promise<void> {
    this.wanted = false;
    return this.follow();
  }

  /** On the leader, what is due now; elsewhere nothing (tests drive both nodes alike). Bound: callers may detach it. */
  readonly runOnce = async (): Promise<void> => {
    if (this.leader.leading) await this.current.runOnce?.();
  };

  /** Elected: start the work (a fresh worker after a lost term: a stopped one may not start again). */
  lead(): void {
    if (!this.wanted || this.active) return;
    if (!this.fresh) this.current = this.make();
    this.fresh = false;
    this.active = this.current;
    this.active.start();
  }

  /** Not (or no longer) elected: stop the work and wait for what it was doing. */
  follow(): Promise<void> {
    const active = this.active;
    this.active = undefined;
    if (active) this.stopping = this.stopping.then(() => active.stop());
    return this.stopping;
  }
}

export class Leader implements Worker {
  readonly name = 'leader';
  /** Always true on SQLite; on PostgreSQL while this node's session holds the lock. */
  leading: boolean;
  private readonly members: Singleton[] = [];
  private readonly postgres: boolean;
  private client: pg.Client | null = null;
  private timer?: NodeJS.Timeout;
  private turn: Promise<void> = Promise.resolve();
  private stopped = false;
  private readonly node: string;

  constructor(private readonly deps: AppDeps) {
    this.node = deps.config.node.id || os.hostname();
    this.postgres = isPostgres(deps.db);
    this.leading = !this.postgres;
  }

  /** Wraps a worker (made by `make`, again after each lost term) so it runs only while this node leads. */
  singleton(make: () => Worker): Worker {
    const member = new Singleton(this, make);
    this.members.push(member);
    return member;
  }

  start(): void {
    if (!this.postgres) return;
    const tick = () => {
      this.turn = this.turn.then(() => this.campaign());
      this.timer = setTimeout(tick, this.deps.config.node.electionRetryMs);
      this.timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.turn;
    await Promise.all(this.members.map((m) => m.follow()));
    // Released before the node's other work ends, so another node can take over without waiting for us.
    const client = this.client;
    this.client = null;
    if (client) {
      await client.query('SELECT pg_advisory_unlock($1)', [LEADER_LOCK_KEY]).catch(() => undefined); // bounded: query_timeout
      await client.end().catch(() => undefined);
    }
    this.leading = !this.postgres;
  }

  /** Leader: is the session still there? Otherwise: try to take the lock. */
  private async campaign(): Promise<void> {
    if (this.stopped) return;
    try {
      if (this.leading) {
        // Bounded: a leader cut off from the server must end its term now, since the server may already have
        // dropped its session (and the lock with it) and elected another node.
        await this.client!.query({ text: 'SELECT 1', query_timeout: this.checkLimitMs() } as pg.QueryConfig); // pg reads query_timeout per query; its types omit it
        return;
      }
      this.client ??= await this.connect();
      const { rows } = await this.client.query<{ won: boolean }>('SELECT pg_try_advisory_lock($1) AS won', [LEADER_LOCK_KEY]);
      if (rows[0]?.won && !this.stopped) this.elected();
    } catch (err) {
      this.deps.log.warn({ err: (err as Error).message }, 'background-work election: the database session failed; trying again');
      await this.lose();
    }
  }

  /** The leader's check gives up after one interval, but not below 1 s (a loaded server is not a lost one). */
  private checkLimitMs(): number {
    return Math.max(CHECK_LIMIT_MIN_MS, this.deps.config.node.electionRetryMs);
  }

  private async connect(): Promise<pg.Client> {
    // Nothing on this session may wait for ever (a partition: no error, no answer); the leader's own check has
    // the tighter bound (campaign). A slow server only delays a follower's election, so its bound is generous.
    const limitMs = Math.max(CONNECT_LIMIT_MS, this.deps.config.node.electionRetryMs);
    const client = new pg.Client({
      connectionString: postgresUrl(this.deps.config),
      application_name: `pigeon-leader-${this.node}`,
      query_timeout: limitMs,
      connectionTimeoutMillis: limitMs,
      keepAlive: true,
    });
    // An error between queries (the server went away) ends the term now, not at the next check.
    client.on('error', (err) => {
      if (this.client !== client) return;
      this.deps.log.warn({ err: err.message }, 'background-work election: session lost');
      this.turn = this.turn.then(() => this.lose());
    });
    await client.connect();
    return client;
  }

  private elected(): void {
    this.leading = true;
    this.deps.log.info({ node: this.node }, 'elected for background work (domain re-checks, reputation watch, TLS reports, pruning)');
    for (const m of this.members) m.lead();
  }

  /** The session is gone or broken: PostgreSQL has dropped (or will drop) the lock with it. */
  private async lose(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (this.leading) {
      this.leading = false;
      this.deps.log.warn('no longer elected for background work; stopping it');
      await Promise.all(this.members.map((m) => m.follow()));
    }
    void client?.end().catch(() => undefined); // not awaited: over a dead link the close may never finish
  }
}

const leaders = new WeakMap<AppDeps, Leader>();

/** The app's election (modules.ts lists it as a worker, and wraps the singletons with `singleton`). */
export function leaderOf(deps: AppDeps): Leader {
  let leader = leaders.get(deps);
  if (!leader) leaders.set(deps, (leader = new Leader(deps)));
  return leader;
}

/** `make()`'s worker, run only on the elected node. */
export function singleton(deps: AppDeps, make: () => Worker): Worker {
  return leaderOf(deps).singleton(make);
}
