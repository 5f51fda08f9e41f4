import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attestationIdOf, signStatement, svrStatement, type AttestationView, type DsseEnvelope, type SignedEnvelope,
} from '../../../src/domain/attestation/index.js';
import { samplePlan, sampleRuntimeStatement, sha256Of, signedRevocation, testSigner, type SampleOptions } from '../../support/attestations.js';
import { runCli } from './harness.js';

/**
 * `cloudly-release attestation verify` as a CI job or an auditor runs it (the built CLI, a child
 * process): real attestations signed with real keys are accepted — from files with no server, and
 * fetched from a real HTTP server that answers as the API will — and each of 25 tampered variants
 * is refused (exit 1) with the reason of the check it fails.
 */

const ed = testSigner('ed25519');
const stranger = testSigner('ed25519');
const SERVICE = 'svc_demo-shop';
/** A token of the right shape (the CLI checks the shape only; this test's server checks that it arrives). */
const TOKEN = [{ alg: 'HS256', typ: 'JWT' }, { sub: 'auditor', role: 'user' }]
  .map((part) => Buffer.from(JSON.stringify(part)).toString('base64url')).join('.') + '.c2lnbmF0dXJl';

let dir: string;
const path = (name: string): string => join(dir, name);
const put = async (name: string, value: unknown): Promise<string> => {
  await writeFile(path(name), typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  return path(name);
};

interface Issued { signed: SignedEnvelope, summary: SignedEnvelope, view: AttestationView, statement: Record<string, any> }

/** Signs a runtime verification (changed as given) and lists it as the API does (its id and issue time derived from what is signed). */
async function issue (opts: SampleOptions, change: (s: Record<string, any>) => void = () => {}): Promise<Issued> {
  const statement: Record<string, any> = JSON.parse(JSON.stringify(sampleRuntimeStatement(opts)));
  change(statement);
  const signed = await signStatement(statement, ed.signer);
  const summary = await signStatement(svrStatement(sampleRuntimeStatement(opts)), ed.signer);
  const view: AttestationView = {
    id: attestationIdOf(statement.predicate.service.id, statement.predicate.rollout.id, 'runtime-verification'),
    serviceId: statement.predicate.service.id,
    rolloutId: statement.predicate.rollout.id,
    generation: statement.predicate.rollout.generation,
    kind: 'runtime-verification',
    issuedAt: Date.parse(statement.predicate.verifiedAt),
    keyId: signed.keyId,
    envelope: signed.envelope,
    summaryEnvelope: summary.envelope,
    digest: signed.digest,
  };
  return { signed, summary, view, statement };
}

const head = (i: Issued) => ({ sequence: i.statement.predicate.chain.sequence as number, envelopeDigest: i.signed.digest });
const flipBase64Byte = (text: string, at: number): string => {
  const bytes = Buffer.from(text, 'base64');
  bytes[at] = bytes[at]! ^ 0x01;
  return bytes.toString('base64');
};

let one: Issued, two: Issued, three: Issued;
let keyFile: string, strangerKey: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'attest-cli-'));
  one = await issue({ plan: samplePlan({ generation: 1 }) });
  two = await issue({ plan: samplePlan({ generation: 2 }), previous: head(one) });
  three = await issue({ plan: samplePlan({ generation: 3 }), previous: head(two) });
  keyFile = await put('trusted.pub', ed.publicKeyPem);
  strangerKey = await put('stranger.pub', stranger.publicKeyPem);
  for (const [name, issued] of Object.entries({ one, two, three })) {
    await put(`${name}.json`, issued.view);
    await put(`${name}.envelope.json`, issued.signed.envelope);
  }
});
afterAll(async () => { if (dir) await rm(dir, { recursive: true, force: true }); });

const verify = (args: string[]) => runCli(['attestation', 'verify', ...args], { CLOUDLY_URL: undefined, CLOUDLY_TOKEN: undefined });

describe('cloudly-release attestation verify, offline', () => {
  it('accepts every untampered attestation: listings, bare envelopes, the SVR, the revocation, the chain', async () => {
    const revocation = await signedRevocation(ed.signer, three.signed, head(three), samplePlan({ generation: 3 }));
    const accepted: string[][] = [
      ['--file', path('one.json'), '--key', keyFile],
      ['--file', path('three.envelope.json'), '--key', keyFile],
      ['--file', await put('svr.json', three.summary.envelope), '--key', keyFile],
      ['--file', await put('revocation.json', revocation.signed.envelope), '--key', keyFile, '--chain', path('three.json')],
      ['--file', path('three.json'), '--key', keyFile, '--digest', samplePlan().requestedDigest],
      ['--file', path('three.json'), '--key', keyFile, '--chain', path('one.json'), '--chain', path('two.envelope.json')],
      ['--file', path('three.json'), '--key', keyFile, '--after', two.signed.digest],
      ['--file', path('one.json'), '--key', await put('bundle.pub', `${stranger.publicKeyPem}\n${ed.publicKeyPem}`)],
      ['--file', await put('answer.json', { attestation: three.view }), '--key', keyFile],
    ];
    for (const args of accepted) {
      const run = await verify(args);
      expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 0, stderr: '' });
      expect(run.stdout).toMatch(/^accepted: /);
    }
    const text = await verify(['--file', path('three.json'), '--key', keyFile, '--chain', path('one.json'), '--chain', path('two.json')]);
    expect(text.stdout).toContain(`accepted: runtime-verification/v1 of ${samplePlan().digestPinnedImageReference} — service svc_demo-shop (demo-shop), ` +
      'rollout ro_0003-demo generation 3 succeeded: 6 replicas on 3 nodes');
    expect(text.stdout).toContain(`  signed by key ${ed.signer.activeKey.keyId}; digest ${three.signed.digest}`);
    expect(text.stdout).toContain(`  chain: sequence 3, after ${two.signed.digest}`);
    expect(text.stdout).toContain('  SVR verified: CLOUDLY_RELEASE_RUNTIME_VERIFIED, CLOUDLY_RELEASE_ALL_REQUIRED_REPLICAS_VERIFIED');
    expect(text.stdout).toContain('chain verified: 2 earlier attestation file(s), then 1 attestation(s)');

    const json = await verify(['--file', path('three.json'), '--key', keyFile, '--json']);
    expect(json.code).toBe(0);
    expect(json.json()).toMatchObject({
      ok: true,
      command: 'attestation',
      exitCode: 0,
      accepted: true,
      attestations: [{
        predicateType: 'https://serve.zone/cloudly-release/runtime-verification/v1',
        keyId: ed.signer.activeKey.keyId,
        digest: three.signed.digest,
        chain: { sequence: 3, previous: two.signed.digest },
        outcome: 'succeeded',
      }],
    });
  });

  it('refuses 25 tampered variants, each with exit 1 and the reason of the check it fails', async () => {
    const e = three.signed.envelope;
    const v = three.view;
    const plan3 = samplePlan({ generation: 3 });
    const after2 = { plan: plan3, previous: head(two) };
    const resignedView = async (name: string, change: (s: Record<string, any>) => void) => put(`${name}.json`, (await issue(after2, change)).view);
    const foreign = (await signStatement(JSON.parse(Buffer.from(e.payload, 'base64').toString('utf8')), stranger.signer)).envelope;
    const fork = await issue({ plan: samplePlan({ generation: 4 }), previous: head(one) });
    const liar = await issue({ plan: samplePlan({ generation: 4 }), previous: { sequence: 2, envelopeDigest: 'c'.repeat(64) } });
    const otherDigest = sha256Of('another build');
    const variants: Array<{ name: string, args: string[], code: string, reason: RegExp }> = [
      {
        name: 'flipped payload byte',
        code: 'signature-invalid',
        reason: /signature 1 \(trusted key [a-f0-9]{64}\) does not verify over the payload/,
        args: ['--file', await put('t1.json', { ...v, envelope: { ...e, payload: flipBase64Byte(e.payload, 99) } })],
      },
      {
        name: 'flipped signature byte',
        code: 'signature-invalid',
        reason: /signature 1 \(trusted key [a-f0-9]{64}\) does not verify over the payload/,
        args: [
          '--file',
          await put('t2.json', { ...v, envelope: { ...e, signatures: [{ ...e.signatures[0], sig: flipBase64Byte(e.signatures[0]!.sig, 7) }] } }),
        ],
      },
      {
        name: 'swapped subject digest',
        code: 'subject-digest-mismatch',
        reason: new RegExp(`the subject digest is ${otherDigest}, expected ${plan3.requestedDigest}`),
        args: [
          '--file',
          await resignedView('t3', (s) => {
            s.subject[0] = { name: `registry.example.com/demo/demo-shop@${otherDigest}`, digest: { sha256: otherDigest.slice(7) } };
          }),
          '--digest',
          plan3.requestedDigest,
        ],
      },
      {
        name: 'subject name does not pin its digest',
        code: 'subject-inconsistent',
        reason: /the subject name 'registry.example.com\/demo\/demo-shop:v7' does not pin/,
        args: ['--file', await resignedView('t4', (s) => { s.subject[0].name = 'registry.example.com/demo/demo-shop:v7'; })],
      },
      {
        name: 'dropped replica',
        code: 'replicas-incomplete',
        reason: /node 'node-c' has 1 attested replica, the plan requires 2 per node/,
        args: ['--file', await resignedView('t5', (s) => { s.predicate.replicas.pop(); })],
      },
      {
        name: 'duplicated replica',
        code: 'replicas-duplicated',
        reason: /replica 'node-c.1.g3' is listed more than once/,
        args: ['--file', await resignedView('t6', (s) => { s.predicate.replicas[5] = s.predicate.replicas[4]; })],
      },
      {
        name: 'swapped repo digest',
        code: 'replica-evidence-mismatch',
        reason: /replica 'node-b.1.g3' on node 'node-b': its repo digests/,
        args: ['--file', await resignedView('t7', (s) => { s.predicate.replicas[2].repoDigests = [`registry.example.com/demo/demo-shop@${otherDigest}`]; })],
      },
      {
        name: 'changed predicate type',
        code: 'predicate-type-unsupported',
        reason: /predicateType 'https:\/\/slsa.dev\/provenance\/v1' is not one accepted here/,
        args: ['--file', await resignedView('t8', (s) => { s.predicateType = 'https://slsa.dev/provenance/v1'; })],
      },
      {
        name: 'wrong key',
        code: 'signature-untrusted',
        reason: new RegExp(`signature 1 \\(key ${ed.signer.activeKey.keyId}\\); trusted: ${stranger.signer.activeKey.keyId}`),
        args: ['--file', path('three.json'), '--key', strangerKey],
      },
      {
        name: 'reordered chain',
        code: 'chain-reordered',
        reason: /sequence 2 \([a-f0-9]{64}\) comes after sequence 3/,
        args: ['--file', path('two.json'), '--chain', path('one.json'), '--chain', path('three.json')],
      },
      {
        name: 'forked chain',
        code: 'chain-forked',
        reason: /both claim sequence 2 after/,
        args: ['--file', await put('t11.json', fork.view), '--chain', path('one.json'), '--chain', path('two.json')],
      },
      {
        name: 'gap in the chain',
        code: 'chain-gap',
        reason: /sequence 1 is followed by 3/,
        args: ['--file', path('three.json'), '--chain', path('one.json')],
      },
      {
        name: 'broken link',
        code: 'chain-broken',
        reason: new RegExp(`broken at sequence 3: it names c{64} previous attestation, but sequence 2 is ${two.signed.digest}`),
        args: ['--file', await put('t13.json', liar.view), '--chain', path('one.json'), '--chain', path('two.json')],
      },
      {
        name: 'truncated envelope',
        code: 'envelope-malformed',
        reason: /not JSON/,
        args: ['--file', await put('t14.json', JSON.stringify(e).slice(0, 120))],
      },
      {
        name: 'only a signature by an untrusted key',
        code: 'signature-untrusted',
        reason: new RegExp(`signature 1 \\(key ${stranger.signer.activeKey.keyId}\\); trusted: ${ed.signer.activeKey.keyId}`),
        args: ['--file', await put('t15.json', { ...e, signatures: foreign.signatures })],
      },
      {
        name: 'wrong payloadType',
        code: 'payload-type-unsupported',
        reason: /payloadType is 'application\/vnd.in-toto\+cbor'/,
        args: ['--file', await put('t16.json', { ...e, payloadType: 'application/vnd.in-toto+cbor' })],
      },
      {
        name: 'signatures removed',
        code: 'signature-missing',
        reason: /carries no signature/,
        args: ['--file', await put('t17.json', { ...e, signatures: [] })],
      },
      {
        name: 'statement type',
        code: 'statement-malformed',
        reason: /not an in-toto Statement v1: \/_type/,
        args: ['--file', await resignedView('t18', (s) => { s._type = 'https://in-toto.io/Statement/v0.1'; })],
      },
      {
        name: 'evidence field removed',
        code: 'predicate-invalid',
        reason: /\/predicate\/replicas\/0\/containerImageId: Expected required property/,
        args: ['--file', await resignedView('t19', (s) => { delete s.predicate.replicas[0].containerImageId; })],
      },
      {
        name: 'outcome against mode',
        code: 'predicate-inconsistent',
        reason: /outcome 'rolled-back' does not go with rollout mode 'promotion'/,
        args: ['--file', await resignedView('t20', (s) => { s.predicate.outcome = 'rolled-back'; })],
      },
      {
        name: 'listing digest',
        code: 'view-inconsistent',
        reason: /the listing's digest is "d{64}"/,
        args: ['--file', await put('t21.json', { ...v, digest: 'd'.repeat(64) })],
      },
      {
        name: 'listing rollout',
        code: 'view-inconsistent',
        reason: /the listing's rolloutId is "ro_0002-demo", the signed envelope's is "ro_0003-demo"/,
        args: ['--file', await put('t22.json', { ...v, rolloutId: 'ro_0002-demo' })],
      },
      {
        name: 'tampered SVR',
        code: 'summary-invalid',
        reason: /the SVR summary envelope is refused \(signature-invalid\)/,
        args: [
          '--file',
          await put('t23.json', { ...v, summaryEnvelope: { ...three.summary.envelope, payload: flipBase64Byte(three.summary.envelope.payload, 30) } }),
        ],
      },
      {
        name: 'chain after another attestation',
        code: 'chain-start-mismatch',
        reason: new RegExp(`follows ${two.signed.digest}, not ${one.signed.digest}`),
        args: ['--file', path('three.json'), '--after', one.signed.digest],
      },
      {
        name: 'payload not base64',
        code: 'envelope-malformed',
        reason: /the payload is not base64/,
        args: ['--file', await put('t25.json', { ...e, payload: `!${e.payload.slice(1)}` })],
      },
    ];
    expect(variants).toHaveLength(25);
    const reasons: string[] = [];
    for (const variant of variants) {
      const args = variant.args.includes('--key') ? variant.args : [...variant.args, '--key', keyFile];
      const run = await verify([...args, '--json']);
      const doc = run.json();
      expect({ name: variant.name, code: run.code, error: doc.error.code, stderr: run.stderr }).toEqual({
        name: variant.name, code: 1, error: variant.code, stderr: expect.stringMatching(variant.reason),
      });
      expect(run.stderr).toMatch(/^cloudly-release: \S.* refused: /);
      reasons.push(doc.error.message.replace(/^.*? refused: /, ''));
    }
    // A signature cannot tell which of payload and signature was altered: those two share the signature check's reason.
    expect(new Set(reasons).size).toBe(variants.length - 1);
  }, 120_000);

  it('usage errors exit 3 and say what is missing; an unreadable key or file is a usage error too', async () => {
    const cases: Array<[string[], RegExp]> = [
      [[], /needs --file FILE, or --service ID --rollout ID/],
      [['--file', path('one.json')], /needs --key PEM \(repeatable\), or --server-keys/],
      [['--file', path('one.json'), '--key', path('missing.pub')], /--key: cannot read \S+missing.pub \(ENOENT\)/],
      [['--file', path('one.json'), '--key', path('one.json')], /--key \S+one.json: no -----BEGIN PUBLIC KEY----- block/],
      [['--file', path('one.json'), '--key', keyFile, '--digest', 'v7'], /--digest must be sha256:<64 hex digits>, got 'v7'/],
      [['--service', SERVICE, '--key', keyFile], /--service needs --rollout/],
      [['--service', SERVICE, '--rollout', 'r', '--key', keyFile], /CLOUDLY_URL is not set/],
    ];
    for (const [args, message] of cases) {
      const run = await verify(args);
      expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 3, stderr: expect.stringMatching(message) });
    }
    expect((await runCli(['attestation', 'check'])).stderr).toMatch(/attestation: unknown subcommand 'check': verify/);
  });
});

describe('cloudly-release attestation verify, fetched from the server', () => {
  let server: Server;
  let url: string;
  const served: { views: AttestationView[], requests: Array<{ url: string, authorization: string | undefined }> } = { views: [], requests: [] };

  beforeAll(async () => {
    // A real HTTP server answering as GET /v1/services/:id/attestations and GET /v1/attestation-keys will.
    server = createServer((req, res) => {
      served.requests.push({ url: req.url ?? '', authorization: req.headers.authorization });
      const u = new URL(req.url ?? '/', 'http://x');
      const body = u.pathname === '/v1/attestation-keys'
        ? { keys: ed.signer.publicKeys() }
        : u.pathname === `/v1/services/${SERVICE}/attestations`
          ? { attestations: served.views.filter((a) => a.rolloutId === u.searchParams.get('rolloutId')) }
          : undefined;
      res.writeHead(body ? 200 : 404, { 'content-type': body ? 'application/json' : 'application/problem+json' });
      res.end(JSON.stringify(body ?? { code: 'not-found', title: 'Not found', status: 404 }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => { await new Promise((resolve) => server.close(resolve)); });

  const fetchVerify = (args: string[]) => runCli(['attestation', 'verify', '--service', SERVICE, ...args], { CLOUDLY_URL: url, CLOUDLY_TOKEN: TOKEN });

  it('verifies what the server lists for a rollout, with a key file or the keys the server lists', async () => {
    const revocation = await signedRevocation(ed.signer, three.signed, head(three), samplePlan({ generation: 3 }));
    const { summaryEnvelope: _, ...attestation } = three.view;
    const revocationView: AttestationView = {
      ...attestation,
      id: attestationIdOf(SERVICE, 'ro_0003-demo', 'revocation'),
      issuedAt: Date.parse(revocation.statement.predicate.revokedAt),
      kind: 'revocation',
      revokes: three.view.id,
      keyId: revocation.signed.keyId,
      envelope: revocation.signed.envelope,
      digest: revocation.signed.digest,
    };
    served.views = [revocationView, three.view, two.view, one.view];

    const withKey = await fetchVerify(['--rollout', 'ro_0003-demo', '--key', keyFile, '--after', two.signed.digest]);
    expect({ code: withKey.code, stderr: withKey.stderr }).toEqual({ code: 0, stderr: '' });
    expect(withKey.stdout.match(/^accepted: /gm)).toHaveLength(2);
    expect(withKey.stdout).toMatch(/accepted: revocation\/v1 of .* revokes att_/);
    expect(served.requests.at(-1)).toEqual({ url: `/v1/services/${SERVICE}/attestations?rolloutId=ro_0003-demo`, authorization: `Bearer ${TOKEN}` });

    const withServerKeys = await fetchVerify(['--rollout', 'ro_0001-demo', '--server-keys']);
    expect(withServerKeys.code).toBe(0);
    expect(withServerKeys.stderr).toContain(`trusting 1 key(s) the server lists: ${ed.signer.activeKey.keyId}`);
    expect(served.requests.some((r) => r.url === '/v1/attestation-keys')).toBe(true);
  });

  it('refuses a tampered attestation the server serves, says when there is none, and exits 4 when the server is away', async () => {
    served.views = [{ ...two.view, envelope: { ...two.view.envelope, payload: flipBase64Byte(two.view.envelope.payload, 50) } as DsseEnvelope }];
    const tampered = await fetchVerify(['--rollout', 'ro_0002-demo', '--key', keyFile]);
    expect(tampered.code).toBe(1);
    expect(tampered.stderr).toMatch(/attestation att_rv_\S+ refused: signature 1 \(trusted key [a-f0-9]{64}\) does not verify over the payload/);

    const none = await fetchVerify(['--rollout', 'ro_9999', '--key', keyFile]);
    expect({ code: none.code, stderr: none.stderr })
      .toEqual({ code: 1, stderr: `cloudly-release: no attestation for rollout ro_9999 of service ${SERVICE}\n` });

    const away = await runCli(['attestation', 'verify', '--service', SERVICE, '--rollout', 'r', '--key', keyFile, '--retries', '0'],
      { CLOUDLY_URL: 'http://127.0.0.1:9', CLOUDLY_TOKEN: TOKEN });
    expect(away.code).toBe(4);
  });
});
