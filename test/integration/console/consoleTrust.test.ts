import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { serviceData } from '../../support/app.js';
import { FIXTURE_HOST, FIXTURE_REPOSITORY, fixtureDigest, fixtureKeyPem, type FixtureCase } from '../../support/cosignFixtures.js';
import { bearer, promote } from '../../support/fixtures.js';
import { pushCosignFixtures } from '../../support/registryFixtures.js';
import { signedIn } from './browser.js';
import { consoleHarness } from './harness.js';

// A release's signature verdict in the console (docs/console.md, docs/trust.md): a real server process whose
// registry configuration points at the real test registry holding the real cosign fixtures, a real browser.
const registryUrl = inject('registryUrl');
const configDir = mkdtempSync(path.join(tmpdir(), 'console-trust-'));
const configFile = path.join(configDir, 'registries.json');
writeFileSync(configFile, JSON.stringify({ registries: [{ host: FIXTURE_HOST, endpoint: registryUrl, allowHttp: true }] }));
const signingKey = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

describe('the console shows a release\'s signature verdict', () => {
  const harness = consoleHarness({ env: { REGISTRY_CONFIG_FILE: configFile, ATTESTATION_SIGNING_KEY: signingKey } });
  beforeAll(async () => { await pushCosignFixtures(registryUrl); });

  async function pushFixture (serviceId: string, name: FixtureCase): Promise<string> {
    const digest = fixtureDigest(name);
    const releaseId = `rel_${createHash('sha256').update(`${serviceId}/${digest}`).digest('hex').slice(0, 24)}`;
    const res = await harness.stage.api.inject({
      method: 'POST',
      url: '/v1/registry/push-events',
      headers: bearer(harness.stage.releaser),
      payload: {
        deploymentPolicy: 'immutable-digest',
        eventId: `evt_${randomBytes(8).toString('hex')}`,
        releaseId,
        protocol: 'oci',
        registryHost: FIXTURE_HOST,
        repository: FIXTURE_REPOSITORY,
        tag: name,
        registryRootDigest: digest,
        digestPinnedImageReference: `${FIXTURE_HOST}/${FIXTURE_REPOSITORY}@${digest}`,
        imageUrl: `${FIXTURE_HOST}/${FIXTURE_REPOSITORY}:${name}`,
        observedAt: Date.now(),
        serviceId,
        imageId: 'img-1',
        manifestMediaType: 'application/vnd.oci.image.manifest.v1+json',
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    return releaseId;
  }

  it('a Signature column: "signed" and the key id for the verified release, "not verified yet" for the other', async () => {
    const { stage } = harness;
    const created = await stage.api.inject({
      method: 'POST',
      url: '/v1/services',
      headers: bearer(stage.admin),
      payload: serviceData({
        registryTarget: { protocol: 'oci', registryHost: FIXTURE_HOST, repository: FIXTURE_REPOSITORY },
        placement: { clusterIds: ['c1'], replicasPerNode: 1 },
        trustPolicy: { publicKeys: [{ keyId: 'ci', publicKeyPem: fixtureKeyPem('trusted') }] },
      }),
    });
    expect(created.statusCode, created.body).toBe(201);
    const serviceId = created.json().service.id as string;
    const signed = await pushFixture(serviceId, 'signed');
    const unsigned = await pushFixture(serviceId, 'unsigned');
    const promoted = await promote(stage.api, stage.releaser, serviceId, signed, { generation: 0 });
    expect(promoted.statusCode, promoted.body).toBe(200);

    const cp = await harness.open();
    await signedIn(cp, stage.base, stage.admin, `#/services/${serviceId}`);
    const cell = await cp.page.waitForSelector(`tr[data-release-id="${signed}"] td[title*="under policy sha256:"]`);
    expect(await cell?.evaluate((el) => el.textContent)).toBe('signed key ci');
    const headers = await cp.page.$$eval('table.releases thead th', (ths) => ths.map((th) => th.textContent));
    expect(headers).toContain('Signature');
    const other = await cp.page.$eval(`tr[data-release-id="${unsigned}"]`, (tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent));
    expect(other).toContain('not verified yet');
  });
});
