import { CloneType, type TSchema } from '@sinclair/typebox';

/**
 * One realistic example per request body, for the OpenAPI document (`/docs`): what a client
 * generator, Swagger UI's "Try it out" and a fuzzer start from. One service, `checkout`, runs
 * through all of them. test/integration/http/openapi.test.ts checks that every body of the
 * document has one and that each is accepted by its route's schema.
 */

const digest = 'sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a';
const registryHost = 'registry.example.com';
const repository = 'shop/checkout';
const pinned = `${registryHost}/${repository}@${digest}`;
const serviceId = 'svc_Q2hlY2tvdXQx';
const rolloutId = 'ro_8kYd2LqP0xVt';

export const examples = {
  serviceWritableData: {
    name: 'checkout',
    description: 'Checkout API of the web shop',
    imageId: 'img-checkout',
    imageVersion: '1.4.2',
    environment: { LOG_LEVEL: 'info', PAYMENT_PROVIDER_URL: 'https://payments.example.com' },
    scaleFactor: 2,
    balancingStrategy: 'round-robin',
    ports: { web: 8080 },
    resources: { memorySizeMB: 512, cpus: 0.5 },
    domains: [{ name: 'checkout.example.com' }],
    deploymentIds: [],
    registryTarget: { protocol: 'oci', registryHost, repository },
    deployOnPush: false,
    placement: { clusterIds: ['eu-west-1'], replicasPerNode: 2 },
    rolloutPolicy: { progressDeadlineSeconds: 600, stabilityWindowSeconds: 10 },
  },
  clusterWritableData: {
    name: 'eu-west-1',
    nodeNames: ['eu-west-1-node-a', 'eu-west-1-node-b', 'eu-west-1-node-c'],
  },
  pushEvent: {
    deploymentPolicy: 'immutable-digest',
    eventId: 'evt_2026-12-01T09-30-12Z_7f3a',
    releaseId: 'rel_checkout_4f9c3b2a7d1e',
    protocol: 'oci',
    registryHost,
    repository,
    tag: '1.4.2',
    registryRootDigest: digest,
    digestPinnedImageReference: pinned,
    imageUrl: `${registryHost}/${repository}:1.4.2`,
    observedAt: 1764581412000,
    serviceId,
    imageId: 'img-checkout',
    manifestMediaType: 'application/vnd.oci.image.index.v1+json',
  },
  promote: {
    expectedRolloutGeneration: 3,
    expectedCurrentRolloutId: rolloutId,
    enableImmutableImage: true,
    reason: 'release 1.4.2 passed the staging checks',
  },
  rollback: {
    expectedCurrentRolloutId: rolloutId,
    expectedRolloutGeneration: 4,
    reason: 'error rate above 2 % after 1.4.2',
  },
  abort: {
    expectedCurrentRolloutId: rolloutId,
    expectedRolloutGeneration: 4,
    reason: 'the rollout of 1.4.2 is stuck on eu-west-1-node-b',
  },
  snapshotReport: {
    serviceId,
    deployments: [{
      id: 'eu-west-1-node-a-task-0',
      serviceId,
      nodeName: 'eu-west-1-node-a',
      status: 'running',
      deploymentLog: [],
      rolloutId,
      rolloutGeneration: 4,
      runtimeImageEvidence: {
        verificationStatus: 'verified',
        rolloutId,
        rolloutGeneration: 4,
        expectedDigest: digest,
        serviceImageReference: pinned,
        taskImageReference: pinned,
        taskReportedDigest: digest,
        containerImageId: 'sha256:9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b',
        containerConfigImageReference: pinned,
        resolvedDigest: digest,
        repoDigests: [pinned],
        evidenceSource: 'local-container-inspect',
        observedAt: 1764581530000,
      },
    }],
    reporterNodeNames: ['eu-west-1-node-a'],
    immutableReport: {
      rolloutId,
      rolloutGeneration: 4,
      reporterSessionId: 'coreflow-eu-west-1-2026-12-01',
      reportSequence: 17,
      reporterCapabilities: { immutableImageDeploymentVersion: 1 },
      reporterNodeIds: ['node-id-eu-west-1-a'],
      reporterNodeNames: ['eu-west-1-node-a'],
    },
    reportedAt: 1764581531000,
  },
  typedRequest: {
    method: 'getServiceById',
    request: { identity: { jwt: '<the caller\'s JWT>' }, serviceId },
    response: null,
    correlation: { id: 'c0ffee00-1d2e-4f3a-9b8c-7d6e5f4a3b2c', phase: 'request' },
  },
} as const;

/** An Idempotency-Key as a CI script would send it (a UUID, reused on every retry of the same request). */
export const idempotencyKeyExample = '3f2a9c4e-8b1d-4e6f-a7c5-0d9e8b7a6c51';

/** The schema with its example (an annotation: validation is unchanged). */
export const withExample = <T extends TSchema>(schema: T, example: unknown): T => CloneType(schema, { examples: [example] });
