/**
 * Builds the parts of the MTA from the app's dependencies: the pipeline's
 * steps (pipeline.ts) with their collaborators — MX resolver, SMTP pool and
 * transport, sandbox transport, content preparer with its signer, classifier —
 * and the metrics. The hooks other modules plug in are read at call time, so
 * wiring (modules.ts) or a test can replace them after construction.
 */
import type { AppDeps } from '../deps';
import type { Db } from '../db';
import { createClassifier } from './classify';
import { ContentPreparer, type PrepareContent } from './content';
import { cachedSigningKeys, type SigningKeyLookup } from './dkim';
import { createDeliveryMetrics, type DeliveryMetrics } from './metrics';
import { createMxResolver } from './mx';
import type { PipelineDeps } from './pipeline';
import { queueDepth } from './queue';
import { createSandboxTransport } from './sandbox';
import { createSigner, type Signer } from './signer';
import { SmtpPool } from './smtp-pool';
import type { PickSource, SourceSettled } from './source';
import { createSmtpTransport } from './transmit';
import { verpAddress } from './verp';
import { createPolicyResolver } from '../tls-policy/resolver';

export interface DeliveryHooks {
  prepareContent: PrepareContent;
  signingKeys: SigningKeyLookup;
  pickSource: PickSource;
  sourceSettled: SourceSettled;
}

export interface MtaParts {
  pipeline: PipelineDeps;
  pool: SmtpPool;
  signer: Signer;
  metrics: DeliveryMetrics;
}

export function assemble(deps: AppDeps, reader: Db, hooks: DeliveryHooks): MtaParts {
  const { config, clock } = deps;
  const d = config.delivery;
  // The main connection, not the reader: it lives as long as the app, so /metrics works after the MTA stops.
  const metrics = createDeliveryMetrics(deps.metrics.registry, () => queueDepth(deps.db));
  const pool = new SmtpPool(
    { maxPerHost: d.maxConnectionsPerDomain, maxPerSource: d.maxConnectionsPerIp, messagesPerConnection: d.messagesPerConnection, idleMs: d.idleConnectionMs },
    { opened: () => (metrics.connections.inc(), metrics.connectionsOpened.inc()), closed: () => metrics.connections.dec() },
  );
  const signer = createSigner(d.signingThreads);
  const signingKeys = cachedSigningKeys(() => hooks.signingKeys, () => clock.now());
  const contents = new ContentPreparer({
    db: reader,
    clock,
    log: deps.log,
    prepareContent: () => hooks.prepareContent,
    signingKeys: () => signingKeys,
    signer,
  });
  const mx = createMxResolver(config, clock);
  const pipeline: PipelineDeps = {
    db: reader,
    clock,
    prepare: (job) => contents.prepare(job),
    pickSource: () => hooks.pickSource,
    sourceSettled: () => hooks.sourceSettled,
    mx,
    tlsPolicy: createPolicyResolver({ config, clock, reader, transact: (work) => deps.writer.run(work), log: deps.log }),
    transmit: createSmtpTransport({ config, clock, pool, mx, returnPath: (id) => verpAddress(config, id) }),
    sandbox: createSandboxTransport(clock),
    classify: createClassifier(d.bounceRulesFile),
  };
  return { pipeline, pool, signer, metrics };
}
