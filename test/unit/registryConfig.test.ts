import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, registrySettingsOf, trustedRootOf } from '../../src/config.js';
import { isPublicAddress } from '../../src/outbound/registry/index.js';
import { registryConfigDefaults } from '../../src/registryConfig.js';

const dir = mkdtempSync(join(tmpdir(), 'cloudly-registry-config-'));
const file = (name: string, content: string): string => { writeFileSync(join(dir, name), content); return join(dir, name); };
const caPem = readFileSync(join(import.meta.dirname, '..', 'fixtures', 'tls', 'ca.pem'), 'utf8');

describe('REGISTRY_CONFIG_FILE', () => {
  it('without it every host is unlisted: anonymous, https, default limits', () => {
    const settings = registrySettingsOf(loadConfig({}));
    expect(settings.hosts.size).toBe(0);
    expect(settings.limits).toEqual({
      maxManifestBytes: registryConfigDefaults.maxManifestBytes,
      maxBlobBytes: registryConfigDefaults.maxBlobBytes,
      maxArtifacts: registryConfigDefaults.maxArtifacts,
    });
  });

  it('reads YAML with secrets from files, endpoints, CAs and timeouts', () => {
    const yaml = `
registries:
  - host: ghcr.io
    auth: { kind: basic, username: ci, passwordFile: ${file('password', 'p4ss\n')} }
  - host: registry.internal:5000
    endpoint: https://10.0.0.5:5000
    caFile: ${file('ca.pem', caPem)}
    auth: { kind: bearer, token: static-token }
    connectTimeoutMs: 500
    timeoutMs: 2000
limits: { maxManifestBytes: 65536 }
`;
    const settings = registrySettingsOf(loadConfig({ REGISTRY_CONFIG_FILE: file('registries.yaml', yaml) }));
    expect(settings.hosts.get('ghcr.io')).toMatchObject({ endpoint: new URL('https://ghcr.io'), credentials: { kind: 'basic', username: 'ci', password: 'p4ss' } });
    expect(settings.hosts.get('registry.internal:5000')).toMatchObject({
      endpoint: new URL('https://10.0.0.5:5000'), credentials: { kind: 'bearer', token: 'static-token' }, ca: caPem, connectTimeoutMs: 500, timeoutMs: 2000, configured: true,
    });
    expect(settings.limits.maxManifestBytes).toBe(65536);
  });

  it('stops the start with one line naming the file and the field', () => {
    const load = (name: string, content: string) => () => loadConfig({ REGISTRY_CONFIG_FILE: file(name, content) });
    expect(load('http.json', '{"registries":[{"host":"r.example","endpoint":"http://r.example"}]}'))
      .toThrow(/^REGISTRY_CONFIG_FILE: .*http\.json: \/registries\/0\/endpoint: plain http needs allowHttp: true/);
    expect(load('twice.json', '{"registries":[{"host":"r.example"},{"host":"r.example"}]}')).toThrow(/\/registries\/1\/host: r\.example is listed twice$/);
    expect(load('secret.json', `{"registries":[{"host":"r.example","auth":{"kind":"basic","username":"u","passwordFile":"${join(dir, 'missing')}"}}]}`))
      .toThrow(/\/registries\/0\/auth\/passwordFile: cannot read .*missing \(ENOENT\)$/);
    expect(load('both.json', '{"registries":[{"host":"r.example","auth":{"kind":"bearer"}}]}')).toThrow(/give exactly one of token and tokenFile$/);
    expect(load('extra.json', '{"registries":[{"host":"r.example","proxy":"x"}]}')).toThrow(/^REGISTRY_CONFIG_FILE: .*extra\.json: \/registries\/0\/proxy: /);
    expect(load('broken.yaml', 'registries: [')).toThrow(/broken\.yaml: not JSON or YAML/);
    expect(() => loadConfig({ REGISTRY_CONFIG_FILE: join(dir, 'absent.yaml') }))
      .toThrow(/^REGISTRY_CONFIG_FILE: the registry configuration: cannot read .*\(ENOENT\)$/);
  });
});

describe('SIGSTORE_TRUSTED_ROOT_FILE', () => {
  it('accepts a trusted root with a certificate authority, and refuses what is not one', () => {
    const der = new X509Certificate(caPem).raw.toString('base64');
    const root = {
      mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
      tlogs: [],
      certificateAuthorities: [{
        subject: { organization: 'test', commonName: 'test CA' }, uri: 'https://ca.example', certChain: { certificates: [{ rawBytes: der }] }, validFor: { start: '2026-01-01T00:00:00Z' },
      }],
      ctlogs: [],
      timestampAuthorities: [],
    };
    expect(trustedRootOf(loadConfig({ SIGSTORE_TRUSTED_ROOT_FILE: file('root.json', JSON.stringify(root)) }))).toEqual(root);
    expect(() => loadConfig({ SIGSTORE_TRUSTED_ROOT_FILE: file('not-root.json', '{"tlogs":[]}') }))
      .toThrow(/^SIGSTORE_TRUSTED_ROOT_FILE: .*not-root\.json is not a readable Sigstore trusted root \(the trusted root names no certificate authority\)$/);
  });
});

describe('isPublicAddress (SSRF rule for unlisted registries)', () => {
  it('refuses loopback, link-local, private and mapped forms of them', () => {
    for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fe80::1', 'fd00::1',
      '::ffff:127.0.0.1', '::ffff:a9fe:a9fe', '64:ff9b::10.0.0.1', '224.0.0.1']) expect(isPublicAddress(address), address).toBe(false);
    for (const address of ['140.82.112.3', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8']) expect(isPublicAddress(address), address).toBe(true);
  });
});
