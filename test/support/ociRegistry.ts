import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A real OCI distribution-spec registry for tests — go-containerregistry's (`crane registry serve`,
 * in memory) — and the few plain-HTTP calls a test needs to put an image and its attestation
 * artifact into it (distribution spec: monolithic blob upload, manifest PUT). The project's own
 * registry client (issue 21, item 2) comes later; these helpers stay small on purpose.
 */

/** A Go tool from $<NAME>, else PATH, else ~/go/bin (where `go install` puts it); undefined when absent. */
export function goTool (name: 'crane' | 'cosign'): string | undefined {
  const fromEnv = process.env[name.toUpperCase()];
  if (fromEnv && existsSync(fromEnv)) return fromEnv;
  const onPath = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  if (onPath.status === 0 && onPath.stdout.trim() !== '') return onPath.stdout.trim();
  const home = join(process.env['HOME'] ?? '/root', 'go', 'bin', name);
  return existsSync(home) ? home : undefined;
}

export interface TestRegistry {
  /** host:port, as image references name it. */
  host: string;
  stop(): Promise<void>;
}

/** Starts `crane registry serve` on a free loopback port; resolves once it says where it listens. */
export async function startRegistry (crane: string): Promise<TestRegistry> {
  const child: ChildProcess = spawn(crane, ['registry', 'serve', '--address', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const port = await new Promise<number>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => { reject(new Error(`crane registry serve did not start: ${output}`)); }, 15_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      const match = /serving on port (\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`crane registry serve exited with ${code}: ${output}`)); });
  });
  return {
    host: `127.0.0.1:${port}`,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

const digestOf = (bytes: Uint8Array): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

async function expectStatus (response: Response, expected: number, what: string): Promise<void> {
  if (response.status !== expected) throw new Error(`${what}: HTTP ${response.status} ${await response.text()}`);
}

/** Uploads a blob (POST an upload session, PUT the bytes with their digest); returns its digest. */
export async function pushBlob (host: string, repository: string, bytes: Uint8Array): Promise<string> {
  const digest = digestOf(bytes);
  const session = await fetch(`http://${host}/v2/${repository}/blobs/uploads/`, { method: 'POST' });
  await expectStatus(session, 202, `start upload to ${repository}`);
  const location = new URL(session.headers.get('location') ?? '', `http://${host}`);
  location.searchParams.set('digest', digest);
  const put = await fetch(location, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: bytes });
  await expectStatus(put, 201, `upload ${digest}`);
  return digest;
}

/** PUTs a manifest under a tag or digest; returns the manifest's digest. */
export async function putManifest (host: string, repository: string, reference: string, bytes: Uint8Array, mediaType: string): Promise<string> {
  const response = await fetch(`http://${host}/v2/${repository}/manifests/${reference}`, {
    method: 'PUT',
    headers: { 'content-type': mediaType },
    body: bytes,
  });
  await expectStatus(response, 201, `put manifest ${repository}:${reference}`);
  return digestOf(bytes);
}

/** A small single-platform image (one layer of made-up bytes) pushed by digest; returns its digest. */
export async function pushTestImage (host: string, repository: string, seed: string): Promise<string> {
  const layer = Buffer.from(`layer of ${seed}`);
  const config = Buffer.from(JSON.stringify({
    architecture: 'amd64',
    os: 'linux',
    rootfs: { type: 'layers', diff_ids: [digestOf(layer)] },
    config: {},
  }));
  const configDigest = await pushBlob(host, repository, config);
  const layerDigest = await pushBlob(host, repository, layer);
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', size: config.length, digest: configDigest },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', size: layer.length, digest: layerDigest }],
  }));
  const digest = digestOf(manifest);
  await putManifest(host, repository, digest, manifest, 'application/vnd.oci.image.manifest.v1+json');
  return digest;
}
