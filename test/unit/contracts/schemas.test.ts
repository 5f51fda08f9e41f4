/**
 * The TypeBox contract schemas accept upstream-shaped examples and reject what they
 * must, identically under TypeBox's Value.Check, its TypeCompiler and Ajv in strict
 * mode (the validator Fastify uses; here with `removeAdditional: false` and no type
 * coercion, which is how the HTTP layer must configure it for unknown properties to
 * be rejected instead of stripped).
 */
import { Ajv } from 'ajv';
import type { TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import * as C from '../../../src/contracts/index.js';

const ajv = new Ajv({ strict: true, allErrors: false, removeAdditional: false, coerceTypes: false, useDefaults: true });

/** The verdict of all three validators; they must agree. */
const verdict = (schema: TSchema, value: unknown): boolean => {
  const byValue = Value.Check(schema, value);
  const byCompiler = TypeCompiler.Compile(schema).Check(value);
  const byAjv = ajv.compile(schema)(value);
  expect({ byCompiler, byAjv }).toStrictEqual({ byCompiler: byValue, byAjv: byValue });
  return byValue;
};
const accepts = (schema: TSchema, value: unknown): void => {
  expect(verdict(schema, value), JSON.stringify(Value.Errors(schema, value).First() ?? null)).toBe(true);
};
const rejects = (schema: TSchema, value: unknown): void => {
  expect(verdict(schema, value)).toBe(false);
};

const digest = `sha256:${'a3'.repeat(32)}` as const;
const otherDigest = `sha256:${'0f'.repeat(32)}` as const;
const reference = `registry.example.com/team/app@${digest}`;

const release: C.IImageRelease = {
  id: 'release-1',
  data: {
    serviceId: 'service-1',
    imageId: 'image-1',
    registryHost: 'registry.example.com',
    repository: 'team/app',
    registryRootDigest: digest,
    digestPinnedImageReference: reference,
    manifestMediaType: 'application/vnd.oci.image.index.v1+json',
    observedTags: ['latest', 'v1.2.3'],
    firstObservedAt: 1_760_000_000_000,
    lastObservedAt: 1_760_000_100_000,
    observationCount: 2,
    acceptedAt: 1_760_000_200_000,
    lastPromotedAt: 1_760_000_200_000,
    promotionCount: 1,
  },
};

const plan: C.IImmutableImageDeploymentPlan = {
  policy: 'immutable-digest',
  rolloutId: 'rollout-2',
  rolloutGeneration: 2,
  releaseId: 'release-1',
  registryHost: 'registry.example.com',
  repository: 'team/app',
  requestedDigest: digest,
  digestPinnedImageReference: reference,
  manifestMediaType: 'application/vnd.oci.image.manifest.v1+json',
  createdAt: 1_760_000_200_000,
  mode: 'rollback',
  rollbackOfRolloutId: 'rollout-1',
  targetScope: { targetClusterIds: ['cluster-a'], targetNodeNames: ['node-1'], replicasPerNode: 2, requiredReplicaCount: 2 },
};

const verifiedEvidence: C.IVerifiedRuntimeImageEvidence = {
  verificationStatus: 'verified',
  rolloutId: 'rollout-2',
  rolloutGeneration: 2,
  expectedDigest: digest,
  serviceImageReference: reference,
  taskImageReference: reference,
  taskReportedDigest: digest,
  containerImageId: `sha256:${'bb'.repeat(32)}`,
  containerConfigImageReference: reference,
  resolvedDigest: digest,
  platformManifestDigest: otherDigest,
  repoDigests: [reference],
  evidenceSource: 'local-container-inspect',
  observedAt: 1_760_000_300_000,
};

const mismatchedEvidence: C.IUnverifiedRuntimeImageEvidence = {
  verificationStatus: 'mismatched',
  mismatchReason: 'task-image-digest-mismatch',
  taskReportedDigest: otherDigest,
  evidenceSource: 'task-spec',
  observedAt: 1_760_000_300_000,
};

const pendingEvidence: C.IPendingRuntimeImageEvidence = { verificationStatus: 'pending', observedAt: 1 };

const envelope: C.IImmutableRolloutReportEnvelope = {
  rolloutId: 'rollout-2',
  rolloutGeneration: 2,
  reporterSessionId: 'session-a',
  reportSequence: 7,
  reporterCapabilities: { immutableImageDeploymentVersion: 1 },
  reporterNodeIds: ['node-id-1'],
  reporterNodeNames: ['node-1'],
};

const reporterStatus: C.IImageRolloutReporterStatus = {
  reporterId: 'reporter-a',
  reporterSessionId: 'session-a',
  clusterId: 'cluster-a',
  reporterNodeNames: ['node-1'],
  rolloutId: 'rollout-2',
  rolloutGeneration: 2,
  reportSequence: 7,
  reportedAt: 1_760_000_300_000,
  requiredReplicaCount: 2,
  observedReplicaCount: 2,
  healthyReplicaCount: 2,
  verifiedReplicaCount: 2,
  failedReplicaCount: 0,
};

const rolloutStatus: C.IImageRolloutStatus = {
  rolloutId: 'rollout-2',
  rolloutGeneration: 2,
  expectedDigest: digest,
  status: 'rolled-back',
  requiredReplicaCount: 2,
  observedReplicaCount: 2,
  healthyReplicaCount: 2,
  verifiedReplicaCount: 2,
  failedReplicaCount: 0,
  updatedAt: 1_760_000_300_001,
  reporters: [reporterStatus],
};

const deployment: C.IDeployment = {
  id: 'deployment-1',
  serviceId: 'service-1',
  nodeName: 'node-1',
  containerId: 'c'.repeat(64),
  usedImageId: 'image-1',
  slot: 1,
  desiredState: 'running',
  rolloutId: 'rollout-2',
  rolloutGeneration: 2,
  runtimeImageEvidence: verifiedEvidence,
  deploymentLog: ['scheduled', 'started'],
  status: 'running',
  deployedAt: 1_760_000_250_000,
};

const writableData: C.TServiceWritableData = {
  name: 'app',
  description: 'the app',
  imageId: 'image-1',
  imageVersion: '1.2.3',
  environment: { NODE_ENV: 'production', _PRIVATE: 'x' },
  scaleFactor: 2,
  balancingStrategy: 'round-robin',
  ports: { web: 3000, custom: { metrics: '9090' } },
  resources: { memorySizeMB: 512, cpus: 0.5 },
  domains: [{ name: 'app.example.com' }],
  deploymentIds: ['deployment-1'],
  registryTarget: { protocol: 'oci', registryHost: 'registry.example.com', repository: 'team/app', tag: 'latest' },
  deployOnPush: true,
  placement: { clusterIds: ['cluster-a'], replicasPerNode: 2 },
};

const service: C.IService = {
  id: 'service-1',
  data: { ...writableData, immutableImageRequired: true, imageDeployment: plan, imageRolloutStatus: rolloutStatus },
};

const identity: C.IIdentity = { name: 'ci', userId: 'user-1', type: 'machine', role: 'api', expiresAt: 1_900_000_000_000, jwt: 'a.b.c' };

const legacyPush: C.IRegistryPushEvent = {
  protocol: 'oci',
  registryHost: 'registry.example.com',
  repository: 'team/app',
  tag: 'latest',
  digest: 'sha256:whatever-the-registry-sent',
  imageUrl: 'registry.example.com/team/app:latest',
  pushedAt: 1_760_000_000_000,
};

const immutablePush: C.IImmutableRegistryPushEvent = {
  deploymentPolicy: 'immutable-digest',
  eventId: 'event-1',
  releaseId: 'release-1',
  protocol: 'oci',
  registryHost: 'registry.example.com',
  repository: 'team/app',
  tag: 'latest',
  registryRootDigest: digest,
  digestPinnedImageReference: reference,
  imageUrl: 'registry.example.com/team/app:latest',
  observedAt: 1_760_000_000_000,
  serviceId: 'service-1',
  imageId: 'image-1',
  manifestMediaType: 'application/vnd.docker.distribution.manifest.list.v2+json',
};

const image: C.IImage = {
  id: 'image-1',
  data: {
    name: 'app',
    description: '',
    versions: [{
      versionString: '1.2.3',
      digest,
      releaseId: 'release-1',
      manifestMediaType: 'application/vnd.oci.image.index.v1+json',
      registryRepository: 'team/app',
      registryTag: 'latest',
      source: 'registry',
      size: 1234,
      createdAt: 1,
    }],
    lastPushEvent: immutablePush,
  },
};

/** A copy of `value` with `path` (property names) set to `replacement` (undefined deletes). */
const withAt = (value: unknown, path: readonly (string | number)[], replacement: unknown): unknown => {
  const copy: unknown = structuredClone(value);
  let cursor = copy as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) cursor = cursor[key] as Record<string | number, unknown>;
  const last = path[path.length - 1];
  if (last === undefined) throw new Error('empty path');
  if (replacement === undefined) delete cursor[last];
  else cursor[last] = replacement;
  return copy;
};

describe('contract schemas accept upstream-shaped examples', () => {
  const examples: Array<[string, TSchema, unknown]> = [
    ['TSha256Digest', C.TSha256Digest, digest],
    ['IImageRelease', C.IImageRelease, release],
    ['IImmutableImageDeploymentPlan', C.IImmutableImageDeploymentPlan, plan],
    ['IRuntimeImageEvidence (verified)', C.IRuntimeImageEvidence, verifiedEvidence],
    ['IRuntimeImageEvidence (mismatched)', C.IRuntimeImageEvidence, mismatchedEvidence],
    ['IRuntimeImageEvidence (missing)', C.IRuntimeImageEvidence, { ...mismatchedEvidence, verificationStatus: 'missing' }],
    ['IRuntimeImageEvidence (pending)', C.IRuntimeImageEvidence, pendingEvidence],
    ['IRuntimeImageEvidence (not-required)', C.IRuntimeImageEvidence, { verificationStatus: 'not-required', observedAt: 0 }],
    ['IImmutableRolloutReportEnvelope', C.IImmutableRolloutReportEnvelope, envelope],
    ['IImageRolloutReporterStatus', C.IImageRolloutReporterStatus, reporterStatus],
    ['IImageRolloutStatus', C.IImageRolloutStatus, rolloutStatus],
    ['IDeployment', C.IDeployment, deployment],
    ['IService', C.IService, service],
    ['TServiceWritableData', C.TServiceWritableData, writableData],
    ['IIdentity', C.IIdentity, identity],
    ['IRegistryPushEvent', C.IRegistryPushEvent, legacyPush],
    ['IImmutableRegistryPushEvent', C.IImmutableRegistryPushEvent, immutablePush],
    ['IImage (immutable push)', C.IImage, image],
    ['IImage (legacy push)', C.IImage, { ...image, data: { ...image.data, lastPushEvent: legacyPush } }],
  ];
  for (const [name, schema, value] of examples) {
    it(name, () => accepts(schema, value));
  }

  it('the upstream validators accept the plan and status examples', () => {
    expect(C.validateImmutableImageDeploymentPlan(plan)).toStrictEqual([]);
    expect(C.validateImageRolloutStatus(rolloutStatus)).toStrictEqual([]);
    expect(C.buildDigestPinnedImageReference(plan.registryHost, plan.repository, plan.requestedDigest)).toBe(reference);
  });
});

describe('contract schemas reject', () => {
  it('unknown properties, at the top and nested', () => {
    rejects(C.IImageRelease, { ...release, extra: 1 });
    rejects(C.IImageRelease, withAt(release, ['data', 'extra'], 1));
    rejects(C.IImmutableImageDeploymentPlan, withAt(plan, ['targetScope', 'extra'], 1));
    rejects(C.IRuntimeImageEvidence, { ...pendingEvidence, extra: 1 });
    rejects(C.IService, withAt(service, ['data', 'ports', 'extra'], 1));
    rejects(C.IRegistryPushEvent, { ...legacyPush, deploymentPolicy: 'immutable-digest' });
    rejects(C.IImage, withAt(image, ['data', 'lastPushEvent', 'pushedAt'], 1));
  });

  it('non-canonical digests', () => {
    for (const bad of [
      digest.toUpperCase(), `SHA256:${'a3'.repeat(32)}`, ` ${digest}`, `${digest} `, `${digest}\n`,
      `sha256:${'a'.repeat(63)}`, `sha256:${'a'.repeat(65)}`, `sha512:${'a'.repeat(64)}`, `sha256:${'g'.repeat(64)}`, '',
    ]) {
      rejects(C.TSha256Digest, bad);
      rejects(C.IImageRelease, withAt(release, ['data', 'registryRootDigest'], bad));
      rejects(C.IImmutableImageDeploymentPlan, { ...plan, requestedDigest: bad });
      rejects(C.IRuntimeImageEvidence, { ...verifiedEvidence, resolvedDigest: bad });
      rejects(C.IImmutableRegistryPushEvent, { ...immutablePush, registryRootDigest: bad });
      rejects(C.IImageRolloutStatus, { ...rolloutStatus, expectedDigest: bad });
    }
  });

  it('wrong media types and enum values', () => {
    rejects(C.IImageRelease, withAt(release, ['data', 'manifestMediaType'], 'application/json'));
    rejects(C.IImmutableImageDeploymentPlan, { ...plan, manifestMediaType: 'application/vnd.oci.image.index.v1+JSON' });
    rejects(C.IImmutableRegistryPushEvent, { ...immutablePush, manifestMediaType: 'application/vnd.oci.image.config.v1+json' });
    rejects(C.IImmutableImageDeploymentPlan, { ...plan, mode: 'manual' });
    rejects(C.IImmutableImageDeploymentPlan, { ...plan, policy: 'legacy-tag' });
    rejects(C.IImageRolloutStatus, { ...rolloutStatus, status: 'done' });
    rejects(C.IImageRolloutStatus, { ...rolloutStatus, mismatchReason: 'something-else' });
    rejects(C.IImmutableRolloutReportEnvelope, { ...envelope, reporterCapabilities: { immutableImageDeploymentVersion: 2 } });
    rejects(C.IRegistryPushEvent, { ...legacyPush, protocol: 'docker' });
  });

  it('non-integer, negative, unsafe and stringly numbers', () => {
    for (const bad of [1.5, -1, 2 ** 53, '2', null, true]) {
      rejects(C.IImmutableImageDeploymentPlan, { ...plan, rolloutGeneration: bad });
      rejects(C.IDeployment, { ...deployment, rolloutGeneration: bad });
      rejects(C.IImageRelease, withAt(release, ['data', 'firstObservedAt'], bad));
      rejects(C.IImageRolloutStatus, { ...rolloutStatus, verifiedReplicaCount: bad });
      rejects(C.IImmutableRolloutReportEnvelope, { ...envelope, reportSequence: bad });
    }
    rejects(C.IService, withAt(service, ['data', 'ports', 'web'], 70000));
  });

  it('evidence that breaks the discriminated union', () => {
    rejects(C.IRuntimeImageEvidence, { ...verifiedEvidence, mismatchReason: 'pull-failed' });
    rejects(C.IRuntimeImageEvidence, { ...pendingEvidence, mismatchReason: 'pull-failed' });
    rejects(C.IRuntimeImageEvidence, { ...mismatchedEvidence, mismatchReason: undefined });
    rejects(C.IRuntimeImageEvidence, { ...verifiedEvidence, evidenceSource: 'task-spec' });
    rejects(C.IRuntimeImageEvidence, withAt(verifiedEvidence, ['containerImageId'], undefined));
    rejects(C.IRuntimeImageEvidence, { ...verifiedEvidence, verificationStatus: 'pending', extra: 1 });
    rejects(C.IRuntimeImageEvidence, { ...pendingEvidence, verificationStatus: 'unknown' });
    // a verified shape with its status changed is still a valid pending/missing shape only if it fits that branch
    accepts(C.IRuntimeImageEvidence, { ...verifiedEvidence, verificationStatus: 'pending' });
    rejects(C.IRuntimeImageEvidence, { ...verifiedEvidence, verificationStatus: 'missing' });
  });

  it('server-managed fields in writable service data', () => {
    for (const field of C.serverManagedServiceDataFields) {
      rejects(C.TServiceWritableData, { ...writableData, [field]: service.data[field] });
      rejects(C.CreateServiceRequest, { identity, serviceData: { ...writableData, [field]: service.data[field] } });
    }
    accepts(C.UpdateServiceRequest, { identity, serviceId: 'service-1', serviceData: writableData });
  });

  it('map keys that could become query operators or paths', () => {
    for (const key of ['$where', 'a.b', '', '1ABC', 'HAS SPACE', '__proto__x.y']) {
      rejects(C.TServiceWritableData, { ...writableData, environment: { [key]: 'x' } });
    }
    rejects(C.TServiceWritableData, withAt(writableData, ['ports', 'custom'], { 'a.b': '1' }));
    rejects(C.TServiceWritableData, withAt(writableData, ['ports', 'custom'], { $gt: '1' }));
  });

  it('strings and arrays beyond their limits', () => {
    rejects(C.IImageRelease, { ...release, id: 'x'.repeat(C.contractLimits.idLength + 1) });
    rejects(C.IImageRelease, { ...release, id: '' });
    rejects(C.IImmutableImageDeploymentPlan, { ...plan, digestPinnedImageReference: 'x'.repeat(C.contractLimits.referenceLength + 1) });
    rejects(C.IImageRelease, withAt(release, ['data', 'observedTags'], Array.from({ length: C.contractLimits.observedTags + 1 }, (_, i) => `t${i}`)));
    rejects(C.IImageRelease, withAt(release, ['data', 'observedTags'], ['x'.repeat(129)]));
    rejects(C.IServicePlacement, { clusterIds: ['a', 'a'], replicasPerNode: 1 });
    rejects(C.IServicePlacement, { clusterIds: [], replicasPerNode: 1 });
    rejects(C.IServicePlacement, { clusterIds: ['a'], replicasPerNode: 0 });
  });
});

describe('request/response schemas', () => {
  const requests: Array<[C.TTypedRequestMethod, unknown, unknown]> = [
    ['getServiceById', { identity, serviceId: 'service-1' }, { service }],
    ['getServiceImageReleases', { identity, serviceId: 'service-1' }, { releases: [release] }],
    ['promoteServiceImageRelease', {
      identity,
      serviceId: 'service-1',
      releaseId: 'release-1',
      idempotencyKey: 'key-1',
      expectedRolloutGeneration: 0,
      enableImmutableImage: true,
    }, { service }],
    ['rollbackServiceImageRelease', {
      identity,
      serviceId: 'service-1',
      releaseId: 'release-1',
      idempotencyKey: 'key-2',
      expectedCurrentRolloutId: 'rollout-2',
      expectedRolloutGeneration: 2,
    }, { service }],
    ['createService', { identity, serviceData: writableData }, { service }],
    ['updateService', { identity, serviceId: 'service-1', serviceData: writableData }, { service }],
    ['reportDeploymentSnapshots', {
      identity,
      serviceId: 'service-1',
      deployments: [deployment],
      reporterNodeNames: ['node-1'],
      immutableReport: envelope,
      reportedAt: 1_760_000_300_000,
    }, {}],
  ];

  for (const [method, request, response] of requests) {
    it(`${method}: request, payload without identity, response`, () => {
      const contract = C.typedRequestContracts[method];
      expect(contract.method).toBe(method);
      accepts(contract.request, request);
      const { identity: _identity, ...payload } = request as { identity: unknown };
      accepts(contract.payload, payload);
      rejects(contract.payload, request); // identity is not part of the payload
      rejects(contract.request, payload); // but is required in the upstream request
      rejects(contract.request, { ...(request as object), extra: true });
      accepts(contract.response, response);
      rejects(contract.response, { ...(response as object), extra: true });
    });
  }

  it('promotion requires enableImmutableImage: true and an idempotency key', () => {
    const base = {
      identity, serviceId: 'service-1', releaseId: 'release-1', idempotencyKey: 'k', expectedRolloutGeneration: 0,
    };
    rejects(C.PromoteServiceImageReleaseRequest, { ...base, enableImmutableImage: false });
    rejects(C.PromoteServiceImageReleaseRequest, base);
    rejects(C.PromoteServiceImageReleaseRequest, { ...base, enableImmutableImage: true, idempotencyKey: '' });
    accepts(C.PromoteServiceImageReleaseRequest, { ...base, enableImmutableImage: true, expectedCurrentRolloutId: 'rollout-1' });
  });

  it('the contract map covers exactly the seven methods', () => {
    expect(Object.keys(C.typedRequestContracts).sort()).toStrictEqual([
      'createService', 'getServiceById', 'getServiceImageReleases', 'promoteServiceImageRelease',
      'reportDeploymentSnapshots', 'rollbackServiceImageRelease', 'updateService',
    ]);
  });
});
