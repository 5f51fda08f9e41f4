import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IImmutableImageDeploymentPlan } from '../../../src/contracts/index.js';
import { verifyAttestationView, verifyChain, type AttestationView, type ChainMember } from '../../../src/domain/attestation/index.js';
import { testSigner } from '../../support/attestations.js';
import {
  bearer, createFixtureService, httpCaller, promote, pushRelease, registerCluster, type Caller, type FixtureService,
} from '../../support/fixtures.js';
import { startFleet, type Fleet } from '../../support/fleet.js';
import { reportBody, verifiedReplica } from '../../support/reports.js';
import { eventually } from '../../support/wait.js';

/**
 * Exactly one attestation per success across 3 real server processes (`node dist/src/server.js`) on one
 * database, under 50 concurrent reports — each rollout's last reports race to decide its success —
 * and when the process that decides is SIGKILLed right after deciding (`after-success-decision`: the
 * attestation is issued when it starts again, once) or right after storing the attestation
 * (`after-attestation-insert`: its due and event are completed on restart, still one attestation).
 * The chain links every attestation of the service in order, and each verifies with the server's key.
 *
 * The processes sweep rarely (LIFECYCLE_SWEEP_INTERVAL_MS 10 min): what is issued is issued by the
 * process that decided, or by the restarted process's sweep (which is given a short interval).
 */

const NODES = Array.from({ length: 50 }, (_, i) => `n${i + 1}`);
const signer = testSigner('ecdsa-p256');
const ROUNDS = 3;

describe('attestations across 3 server processes', () => {
  let fleet: Fleet;
  let callers: Caller[];
  let admin: string;
  let api: string;
  /** One reporter per node (50 Coreflow sessions of cluster c1), so the 50 reports run in parallel. */
  let reporters: string[];
  let svc: FixtureService;
  let generation = 0;

  beforeAll(async () => {
    fleet = await startFleet({ processes: 3, env: { ATTESTATION_SIGNING_KEY: signer.privateKeyPem, LIFECYCLE_SWEEP_INTERVAL_MS: '600000' } });
    callers = fleet.servers.map((s) => httpCaller(s.url));
    [admin, api] = await Promise.all([fleet.token('admin'), fleet.token('api')]);
    reporters = await Promise.all(NODES.map(async (n) => await fleet.token('cluster', { clusterId: 'c1', subject: `coreflow-${n}` })));
    await registerCluster(callers[0]!, admin, 'c1', NODES);
    svc = await createFixtureService(callers[0]!, admin, { replicasPerNode: 1, rolloutPolicy: { stabilityWindowSeconds: 0 } });
  }, 120_000);
  afterAll(async () => { await fleet?.close(); });

  const refresh = (): void => { callers = fleet.servers.map((s) => httpCaller(s.url)); };

  const report = (via: Caller, plan: IImmutableImageDeploymentPlan, node: string, i: number) => via.inject({
    method: 'POST',
    url: '/v1/deployment-snapshots',
    headers: bearer(reporters[i]!),
    payload: reportBody(plan, svc.id, {
      sequence: 1, nodeNames: [node], session: `s-${node}-${plan.rolloutId}`, deployments: [verifiedReplica(plan, svc.id, node, 0)],
    }),
  });

  async function promoteNext (tag: string, via: Caller): Promise<IImmutableImageDeploymentPlan> {
    const release = await pushRelease(via, api, svc, { tag });
    const res = await promote(via, api, svc.id, release.releaseId, { generation });
    expect(res.statusCode, res.body).toBe(200);
    generation++;
    return res.json().service.data.imageDeployment;
  }

  const attestations = async (query = ''): Promise<AttestationView[]> => {
    const via = callers.find((_, i) => fleet.servers[i]!.running)!;
    const res = await via.inject({ method: 'GET', url: `/v1/services/${svc.id}/attestations${query}`, headers: bearer(api) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().attestations;
  };

  async function oneAttestationOf (plan: IImmutableImageDeploymentPlan): Promise<void> {
    await eventually(`the attestation of ${plan.rolloutId}`, async () => (await attestations(`?rolloutId=${plan.rolloutId}`)).length === 1, 120, 250);
  }

  it(`${ROUNDS} rollouts, each completed by 50 concurrent reports spread over 3 processes: one attestation each`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const plan = await promoteNext(`r${round}`, callers[round % 3]!);
      const answers = await Promise.all(NODES.map(async (node, i) => await report(callers[(i + round) % 3]!, plan, node, i)));
      for (const a of answers) expect(a.statusCode, a.body).toBe(200);
      await oneAttestationOf(plan);
    }
  }, 300_000);

  for (const point of ['after-success-decision', 'after-attestation-insert'] as const) {
    it(`the deciding process is SIGKILLed ${point}: the attestation is issued on restart, once`, async () => {
      await fleet.servers[0]!.restart({ FAULT_INJECTION: point });
      refresh();
      const plan = await promoteNext(`crash-${point}`, callers[1]!);
      // 49 reports through the other two processes, then the one that completes the rollout through process 0.
      const answers = await Promise.all(NODES.slice(0, -1).map(async (node, i) => await report(callers[1 + (i % 2)]!, plan, node, i)));
      for (const a of answers) expect(a.statusCode, a.body).toBe(200);
      await expect(report(callers[0]!, plan, NODES.at(-1)!, NODES.length - 1)).rejects.toThrow();
      expect(await fleet.servers[0]!.exited).toBeNull();
      if (point === 'after-success-decision') expect(await attestations(`?rolloutId=${plan.rolloutId}`)).toHaveLength(0);
      await fleet.servers[0]!.restart({ LIFECYCLE_SWEEP_INTERVAL_MS: '300' });
      refresh();
      await oneAttestationOf(plan);
      const db = await fleet.db();
      const dues = async () => ((await db.collection('services').findOne({ _id: svc.id as never }))?.['attestationsDue'] ?? []) as unknown[];
      await eventually('the due completed', async () => (await dues()).length === 0);
      const logged = async () => await db.collection('events').countDocuments({ serviceId: svc.id, key: { $regex: `^attestation:.*${plan.rolloutId}$` } });
      await eventually('its event logged once', async () => (await logged()) === 1);
    }, 180_000);
  }

  it('the chain links every attestation of the service in order, each verified with the server\'s key, one per rollout', async () => {
    const all = await attestations();
    expect(all).toHaveLength(ROUNDS + 2);
    expect(new Set(all.map((a) => a.rolloutId)).size).toBe(all.length);
    const members: ChainMember[] = all.map((view) => {
      const checked = verifyAttestationView(view, { keys: signer.trusted });
      if (!checked.ok) throw new Error(`${view.id}: ${JSON.stringify(checked.refusal)}`);
      return { envelopeDigest: checked.value.attestation.envelopeDigest, chain: checked.value.attestation.chain!, serviceId: svc.id };
    });
    expect(members.map((m) => m.chain.sequence)).toEqual(all.map((_, i) => i + 1));
    expect(verifyChain(members)).toEqual({ ok: true, value: true });
    const db = await fleet.db();
    expect(await db.collection('events').countDocuments({ serviceId: svc.id, type: 'attestation.issued' })).toBe(ROUNDS + 2);
  }, 60_000);
});
