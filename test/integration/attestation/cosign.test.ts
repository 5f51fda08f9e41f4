import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attestationLayer, cosignAttestationImage, cosignAttestationTag, RUNTIME_VERIFICATION_TYPE, SVR_TYPE, type DsseEnvelope, type OciBlob,
} from '../../../src/domain/attestation/index.js';
import { samplePlan, signedSample, testSigner, type Algorithm, type TestSigner } from '../../support/attestations.js';
import { goTool, pushBlob, pushTestImage, putManifest, startRegistry, type TestRegistry } from '../../support/ociRegistry.js';

/**
 * `cosign verify-attestation --key` accepts the server's attestations when they are attached to
 * the image in cosign's tag layout, and refuses a tampered one: the real cosign (v2) against a real
 * registry (`crane registry serve`). Runs when both tools are found ($COSIGN / $CRANE, PATH or
 * ~/go/bin; `go install github.com/sigstore/cosign/v2/cmd/cosign@v2.6.5` and
 * `go install github.com/google/go-containerregistry/cmd/crane@v0.22.1`); skipped otherwise.
 * Alone: `npx vitest run test/integration/attestation/cosign.test.ts`.
 */
const cosign = goTool('cosign');
const crane = goTool('crane');
const REPOSITORY = 'demo/shop';

interface Run { code: number | null, stdout: string, stderr: string }

function run (command: string, args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => { stdout += d; });
    child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d; });
    const timer = setTimeout(() => { child.kill('SIGKILL'); }, 60_000);
    child.once('error', reject);
    child.once('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

/** Pushes the `.att` image of `digest` with these attestation layers (blobs first, then the manifest under cosign's tag). */
async function attach (host: string, digest: string, layers: OciBlob[]): Promise<void> {
  for (const layer of layers) await pushBlob(host, REPOSITORY, layer.bytes);
  const { manifest, config } = cosignAttestationImage(layers.map((l) => l.descriptor));
  await pushBlob(host, REPOSITORY, config.bytes);
  await putManifest(host, REPOSITORY, cosignAttestationTag(digest), manifest.bytes, manifest.descriptor.mediaType);
}

describe.skipIf(cosign === undefined || crane === undefined)('cosign verify-attestation reads the server\'s attestations', () => {
  let registry: TestRegistry;
  let dir: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    registry = await startRegistry(crane!);
    dir = await mkdtemp(join(tmpdir(), 'cosign-attest-'));
    // cosign keeps a TUF cache under HOME; a key-based, tlog-free verification needs none of it.
    env = { PATH: process.env['PATH'] ?? '', HOME: dir };
  });
  afterAll(async () => {
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const keyFile = async (s: TestSigner, name: string): Promise<string> => {
    const path = join(dir, `${name}.pub`);
    await writeFile(path, s.publicKeyPem);
    return path;
  };

  const verifyAttestation = (key: string, type: string, digest: string): Promise<Run> => run(cosign!, [
    'verify-attestation', '--key', key, '--type', type, '--insecure-ignore-tlog=true', '--allow-insecure-registry',
    `${registry.host}/${REPOSITORY}@${digest}`,
  ], env);

  it.each(['ed25519', 'ecdsa-p256'] as Algorithm[])('accepts the runtime verification and its SVR signed with %s', async (algorithm) => {
    const s = testSigner(algorithm);
    const digest = await pushTestImage(registry.host, REPOSITORY, `accepted ${algorithm}`) as `sha256:${string}`;
    const { signed, summary } = await signedSample(s.signer, { plan: samplePlan({ digest, host: registry.host, repository: REPOSITORY }) });
    await attach(registry.host, digest, [attestationLayer(signed.envelope, RUNTIME_VERIFICATION_TYPE), attestationLayer(summary.envelope, SVR_TYPE)]);
    const key = await keyFile(s, algorithm);

    const runtime = await verifyAttestation(key, RUNTIME_VERIFICATION_TYPE, digest);
    expect(runtime, runtime.stderr).toMatchObject({ code: 0 });
    // cosign prints each verified attestation of the requested type: exactly the server's envelope.
    const printed = runtime.stdout.trim().split('\n').map((line) => JSON.parse(line) as DsseEnvelope);
    expect(printed).toEqual([signed.envelope]);

    const svr = await verifyAttestation(key, SVR_TYPE, digest);
    expect(svr, svr.stderr).toMatchObject({ code: 0 });
    expect(svr.stdout.trim().split('\n').map((line) => JSON.parse(line))).toEqual([summary.envelope]);
  });

  it('refuses a tampered envelope, and the right envelope checked with another key', async () => {
    const s = testSigner('ecdsa-p256');
    const digest = await pushTestImage(registry.host, REPOSITORY, 'tampered') as `sha256:${string}`;
    const { signed } = await signedSample(s.signer, { plan: samplePlan({ digest, host: registry.host, repository: REPOSITORY }) });
    const payload = Buffer.from(signed.envelope.payload, 'base64');
    payload[payload.indexOf('node-b')] = 'm'.charCodeAt(0); // node-b → mode-b: one byte of the signed statement
    const tampered: DsseEnvelope = { ...signed.envelope, payload: payload.toString('base64') };
    await attach(registry.host, digest, [attestationLayer(tampered, RUNTIME_VERIFICATION_TYPE)]);
    const refused = await verifyAttestation(await keyFile(s, 'tampered'), RUNTIME_VERIFICATION_TYPE, digest);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/no matching attestations/);

    // The untampered envelope, verified with a key that did not sign it.
    const other = await pushTestImage(registry.host, REPOSITORY, 'other key') as `sha256:${string}`;
    const honest = await signedSample(s.signer, { plan: samplePlan({ digest: other, host: registry.host, repository: REPOSITORY }) });
    await attach(registry.host, other, [attestationLayer(honest.signed.envelope, RUNTIME_VERIFICATION_TYPE)]);
    expect((await verifyAttestation(await keyFile(s, 'signer'), RUNTIME_VERIFICATION_TYPE, other)).code).toBe(0);
    const wrongKey = await verifyAttestation(await keyFile(testSigner('ecdsa-p256'), 'stranger'), RUNTIME_VERIFICATION_TYPE, other);
    expect(wrongKey.code).not.toBe(0);
    expect(wrongKey.stderr).toMatch(/no matching attestations/);
  });
});
