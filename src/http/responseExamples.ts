/**
 * One realistic example per success answer, for the OpenAPI document (`/docs`), beside the request
 * examples of ./examples.ts: the same service, `checkout` (registry.example.com/shop/checkout, placed on
 * cluster eu-west-1 with two nodes, two replicas each), released as 1.4.1 and then 1.4.2, promoted, half
 * verified and rolled back; and `payments`, whose promotions need two approvals.
 *
 * They are real answers: recorded from the server driven through that story on a fresh database, then
 * given the story's ids and times (December 2025). The signed DSSE envelopes are kept as signed, so their
 * payloads name the ids and times of the recording. test/integration/http/openapi.test.ts checks that every
 * success answer of the document has an example and that its documented schema accepts it.
 */

/* The answers recorded from the real server (see the module comment); parts that several answers share are named once. */
/** The checkout service's settings (its POST /v1/services body, as stored). */
const checkoutSettings = {
  name: 'checkout',
  description: 'Checkout API of the web shop',
  imageId: 'img-checkout',
  imageVersion: '1.4.2',
  environment: {
    LOG_LEVEL: 'info',
    PAYMENT_PROVIDER_URL: 'https://payments.example.com',
  },
  scaleFactor: 2,
  balancingStrategy: 'round-robin',
  ports: {
    web: 8080,
  },
  domains: [
    {
      name: 'checkout.example.com',
    },
  ],
  deploymentIds: [],
  resources: {
    memorySizeMB: 512,
    cpus: 0.5,
  },
  registryTarget: {
    protocol: 'oci',
    registryHost: 'registry.example.com',
    repository: 'shop/checkout',
  },
  deployOnPush: false,
  placement: {
    clusterIds: [
      'eu-west-1',
    ],
    replicasPerNode: 2,
  },
  rolloutPolicy: {
    progressDeadlineSeconds: 600,
    stabilityWindowSeconds: 0,
  },
};

const euWest1 = {
  id: 'eu-west-1',
  nodeNames: [
    'eu-west-1-node-a',
    'eu-west-1-node-b',
  ],
  nodeCount: 2,
  createdAt: 1764580798980,
  updatedAt: 1764580798980,
};

const targetScope = {
  targetClusterIds: [
    'eu-west-1',
  ],
  targetNodeNames: [
    'eu-west-1-node-a',
    'eu-west-1-node-b',
  ],
  replicasPerNode: 2,
  requiredReplicaCount: 4,
};

const attestationSignature = {
  sig: '+UJzLF6Tj86XuIO09eg+yKS+DTA4bAQet02X1YfIx8zZHpaXG0NH0HSv9ScmZDlZyjoDJGiv/771CMFsQhnwDg==',
  keyid: '78ab5807117f5a11cc925987950583166503793c347c99b9f518a35522d2ec65',
};

const summarySignature = {
  sig: 'm495ujw740aVMuHHmY3eXXhLV3XudGTrToG7ro8JTd2g0Rri/SW/5dTd5xJWrN1KMW7pZKYIvKOrtP2Mg0sbBQ==',
  keyid: '78ab5807117f5a11cc925987950583166503793c347c99b9f518a35522d2ec65',
};

const attestationSignatureList = [
  attestationSignature,
];

const summarySignatureList = [
  summarySignature,
];

const subscription = {
  id: 'whsub_7Hc2LkQ9pZxAa1Bf',
  url: 'https://hooks.example.com/cloudly',
  types: [],
  services: {
    all: true,
  },
  enabled: true,
  timeoutMs: 10000,
  health: 'healthy',
  secretCount: 1,
  createdAt: 1764580800684,
  updatedAt: 1764580800684,
};

const pendingRequest = {
  requestId: 'pr_5ae34f03d7edbb9543650b7e',
  serviceId: 'svc_UGF5bWVudHMx',
  releaseId: 'rel_payments_0b3e8c1f5a9d',
  intent: 'promotion',
  requester: {
    subject: 'ci-bot',
    role: 'api',
  },
  reason: 'payments 2.0.0',
  expectedRolloutGeneration: 0,
  createdAt: 1764580800635,
  expiresAt: 1764584400635,
  required: 2,
  approvals: [],
  state: 'pending',
};

const reporters = {
  reporterId: 'eu-west-1/coreflow-eu-west-1',
  reporterSessionId: 'coreflow-eu-west-1-2026-12-01',
  clusterId: 'eu-west-1',
  reporterNodeNames: [
    'eu-west-1-node-a',
    'eu-west-1-node-b',
  ],
  rolloutId: 'ro_8kYd2LqP0xVt',
  rolloutGeneration: 2,
  reportSequence: 2,
  reportedAt: 1764580800001,
  requiredReplicaCount: 4,
  observedReplicaCount: 2,
  healthyReplicaCount: 2,
  verifiedReplicaCount: 2,
  failedReplicaCount: 0,
};

const euWest1Reporters = [
  reporters,
];

/** A replica on node-a that runs, healthy and verified, since the report that made it so; stable at once (window 0). */
const verifiedReplica = (deploymentId: string) => ({
  nodeName: 'eu-west-1-node-a',
  deploymentId,
  deploymentStatus: 'running',
  health: 'healthy',
  verification: 'verified',
  counted: true,
  runningSince: 1764580800011,
  verifiedSince: 1764580800011,
  runningStable: true,
  stable: true,
  stability: { state: 'stable', windowMs: 0, runningVerifiedSince: 1764580800011, stableAt: 1764580800011 },
});

const data = {
  serviceId: 'svc_Q2hlY2tvdXQx',
  imageId: 'img-checkout',
  registryHost: 'registry.example.com',
  repository: 'shop/checkout',
  registryRootDigest: 'sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
  digestPinnedImageReference: 'registry.example.com/shop/checkout@sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
  manifestMediaType: 'application/vnd.oci.image.index.v1+json',
  observedTags: [
    '1.4.2',
  ],
  firstObservedAt: 1764580739364,
  lastObservedAt: 1764580739364,
  observationCount: 1,
};

const release = {
  id: 'rel_checkout_4f9c3b2a7d1e',
  data,
};

const imageDeployment = {
  policy: 'immutable-digest',
  rolloutId: 'ro_8kYd2LqP0xVt',
  rolloutGeneration: 2,
  releaseId: 'rel_checkout_4f9c3b2a7d1e',
  registryHost: 'registry.example.com',
  repository: 'shop/checkout',
  requestedDigest: 'sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
  digestPinnedImageReference: 'registry.example.com/shop/checkout@sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
  manifestMediaType: 'application/vnd.oci.image.index.v1+json',
  createdAt: 1764580799968,
  mode: 'promotion',
  targetScope,
};

const imageRolloutStatus = {
  rolloutId: 'ro_8kYd2LqP0xVt',
  rolloutGeneration: 2,
  expectedDigest: 'sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
  status: 'deploying',
  requiredReplicaCount: 4,
  observedReplicaCount: 2,
  healthyReplicaCount: 2,
  verifiedReplicaCount: 2,
  failedReplicaCount: 0,
  updatedAt: 1764580800016,
  reporters: euWest1Reporters,
};

const summaryEnvelope = {
  payloadType: 'application/vnd.in-toto+json',
  payload: 'eyJfdHlwZSI6Imh0dHBzOi8vaW4tdG90by5pby9TdGF0ZW1lbnQvdjEiLCJwcmVkaWNhdGUiOnsicHJvcGVydGllcyI6WyJDTE9VRExZX1JFTEVBU0VfUlVO' +
    'VElNRV9WRVJJRklFRCIsIkNMT1VETFlfUkVMRUFTRV9BTExfUkVRVUlSRURfUkVQTElDQVNfVkVSSUZJRUQiXSwidGltZUNyZWF0ZWQiOiIyMDI2LTEyLTA1' +
    'VDEzOjExOjA5Ljc4MFoiLCJ2ZXJpZmllciI6eyJpZCI6Imh0dHBzOi8vc2VydmUuem9uZS9jbG91ZGx5LXJlbGVhc2UvdmVyaWZpZXIvdjEiLCJwb2xpY2ll' +
    'cyI6W3siZGlnZXN0Ijp7InNoYTI1NiI6ImE2NDA2MzI4YTJmOTc5MThmYmUxMGQyMzkwM2U3ZWQwYWVhNzVkY2U0OGYxYmMzZTkyNGNmZTA2ZjhiMGQxMGIi' +
    'fSwibmFtZSI6InJvbGxvdXQtcG9saWN5In1dfX0sInByZWRpY2F0ZVR5cGUiOiJodHRwczovL2luLXRvdG8uaW8vYXR0ZXN0YXRpb24vc3ZyL3YwLjIiLCJz' +
    'dWJqZWN0IjpbeyJkaWdlc3QiOnsic2hhMjU2IjoiMGIzZThjMWY1YTlkMmU3YjRjNmE4ZjBkMWUzYjVjN2E5ZjJkNGU2YjhhMGMxZTNmNWE3YjlkMmM0ZTZm' +
    'OGEwYiJ9LCJuYW1lIjoicmVnaXN0cnkuZXhhbXBsZS5jb20vc2hvcC9jaGVja291dEBzaGEyNTY6MGIzZThjMWY1YTlkMmU3YjRjNmE4ZjBkMWUzYjVjN2E5' +
    'ZjJkNGU2YjhhMGMxZTNmNWE3YjlkMmM0ZTZmOGEwYiJ9XX0=',
  signatures: summarySignatureList,
};

const envelope = {
  payloadType: 'application/vnd.in-toto+json',
  payload: 'eyJfdHlwZSI6Imh0dHBzOi8vaW4tdG90by5pby9TdGF0ZW1lbnQvdjEiLCJwcmVkaWNhdGUiOnsiY2hhaW4iOnsicHJldmlvdXNFbnZlbG9wZURpZ2VzdCI6' +
    'bnVsbCwic2VxdWVuY2UiOjF9LCJvdXRjb21lIjoic3VjY2VlZGVkIiwicGxhbkRpZ2VzdCI6eyJzaGEyNTYiOiI3OGRjM2FkZjhkMjk4NjM1NjU4MjYzNWJk' +
    'OGJmM2E5YmE0ZDc1ZjE3NjhlZWU5NGNjZGQ4ZGY1ZTU5NzlkNTI0In0sInBvbGljeURpZ2VzdHMiOnsicm9sbG91dFBvbGljeSI6eyJzaGEyNTYiOiJhNjQw' +
    'NjMyOGEyZjk3OTE4ZmJlMTBkMjM5MDNlN2VkMGFlYTc1ZGNlNDhmMWJjM2U5MjRjZmUwNmY4YjBkMTBiIn0sInRydXN0UG9saWN5IjpudWxsfSwicmVwbGlj' +
    'YXMiOlt7ImNvbnRhaW5lckltYWdlSWQiOiJzaGEyNTY6MGIwZDU3NjEwZGI1YTNmMjQwNTY4MTlmYzBmZGEyMDAyODcxYTY0MDc3MDA2OGUyNDFmNWM5MDE5' +
    'NDA3MDhhNyIsImRlcGxveW1lbnRJZCI6ImV1LXdlc3QtMS1ub2RlLWEtdGFzay0wIiwibm9kZU5hbWUiOiJldS13ZXN0LTEtbm9kZS1hIiwicmVwb0RpZ2Vz' +
    'dHMiOlsicmVnaXN0cnkuZXhhbXBsZS5jb20vc2hvcC9jaGVja291dEBzaGEyNTY6MGIzZThjMWY1YTlkMmU3YjRjNmE4ZjBkMWUzYjVjN2E5ZjJkNGU2Yjhh' +
    'MGMxZTNmNWE3YjlkMmM0ZTZmOGEwYiJdLCJyZXBvcnRlciI6eyJpZCI6ImV1LXdlc3QtMS9jb3JlZmxvdy1ldS13ZXN0LTEiLCJzZXNzaW9uSWQiOiJjb3Jl' +
    'Zmxvdy1ldS13ZXN0LTEtMjAyNi0xMi0wMSJ9LCJyZXNvbHZlZERpZ2VzdCI6InNoYTI1NjowYjNlOGMxZjVhOWQyZTdiNGM2YThmMGQxZTNiNWM3YTlmMmQ0' +
    'ZTZiOGEwYzFlM2Y1YTdiOWQyYzRlNmY4YTBiIiwidmVyaWZpZWRTaW5jZSI6IjIwMjYtMTItMDVUMTM6MTE6MDkuNzYwWiJ9LHsiY29udGFpbmVySW1hZ2VJ' +
    'ZCI6InNoYTI1Njo0MGEwOTRlNjYxZDU0MGQ0MzEyNGQyY2M1ZGE1ZmJmZWQyNTBjZjE5NTk5ZjQwNGUwZWMyNmJlMzU1YzVkODgyIiwiZGVwbG95bWVudElk' +
    'IjoiZXUtd2VzdC0xLW5vZGUtYS10YXNrLTEiLCJub2RlTmFtZSI6ImV1LXdlc3QtMS1ub2RlLWEiLCJyZXBvRGlnZXN0cyI6WyJyZWdpc3RyeS5leGFtcGxl' +
    'LmNvbS9zaG9wL2NoZWNrb3V0QHNoYTI1NjowYjNlOGMxZjVhOWQyZTdiNGM2YThmMGQxZTNiNWM3YTlmMmQ0ZTZiOGEwYzFlM2Y1YTdiOWQyYzRlNmY4YTBi' +
    'Il0sInJlcG9ydGVyIjp7ImlkIjoiZXUtd2VzdC0xL2NvcmVmbG93LWV1LXdlc3QtMSIsInNlc3Npb25JZCI6ImNvcmVmbG93LWV1LXdlc3QtMS0yMDI2LTEy' +
    'LTAxIn0sInJlc29sdmVkRGlnZXN0Ijoic2hhMjU2OjBiM2U4YzFmNWE5ZDJlN2I0YzZhOGYwZDFlM2I1YzdhOWYyZDRlNmI4YTBjMWUzZjVhN2I5ZDJjNGU2' +
    'ZjhhMGIiLCJ2ZXJpZmllZFNpbmNlIjoiMjAyNi0xMi0wNVQxMzoxMTowOS43NjBaIn0seyJjb250YWluZXJJbWFnZUlkIjoic2hhMjU2OmUzM2RjMTEyZTEx' +
    'NzI2OWE2ODg4MmIwN2Y0ODc4YWQ2NWQ1NmI2MzRmM2Y0YTdkYjZhMjZiZjU1MjZiYzg3YzciLCJkZXBsb3ltZW50SWQiOiJldS13ZXN0LTEtbm9kZS1iLXRh' +
    'c2stMCIsIm5vZGVOYW1lIjoiZXUtd2VzdC0xLW5vZGUtYiIsInJlcG9EaWdlc3RzIjpbInJlZ2lzdHJ5LmV4YW1wbGUuY29tL3Nob3AvY2hlY2tvdXRAc2hh' +
    'MjU2OjBiM2U4YzFmNWE5ZDJlN2I0YzZhOGYwZDFlM2I1YzdhOWYyZDRlNmI4YTBjMWUzZjVhN2I5ZDJjNGU2ZjhhMGIiXSwicmVwb3J0ZXIiOnsiaWQiOiJl' +
    'dS13ZXN0LTEvY29yZWZsb3ctZXUtd2VzdC0xIiwic2Vzc2lvbklkIjoiY29yZWZsb3ctZXUtd2VzdC0xLTIwMjYtMTItMDEifSwicmVzb2x2ZWREaWdlc3Qi' +
    'OiJzaGEyNTY6MGIzZThjMWY1YTlkMmU3YjRjNmE4ZjBkMWUzYjVjN2E5ZjJkNGU2YjhhMGMxZTNmNWE3YjlkMmM0ZTZmOGEwYiIsInZlcmlmaWVkU2luY2Ui' +
    'OiIyMDI2LTEyLTA1VDEzOjExOjA5Ljc2MFoifSx7ImNvbnRhaW5lckltYWdlSWQiOiJzaGEyNTY6ZTRjYjRhZTViODljYTRlODg1N2Q3NWU0MjIyNjFmNmVl' +
    'YWNhN2JiYjE5YmVkNTRmNjNjNDQ4MTQyOTY2OTRmNSIsImRlcGxveW1lbnRJZCI6ImV1LXdlc3QtMS1ub2RlLWItdGFzay0xIiwibm9kZU5hbWUiOiJldS13' +
    'ZXN0LTEtbm9kZS1iIiwicmVwb0RpZ2VzdHMiOlsicmVnaXN0cnkuZXhhbXBsZS5jb20vc2hvcC9jaGVja291dEBzaGEyNTY6MGIzZThjMWY1YTlkMmU3YjRj' +
    'NmE4ZjBkMWUzYjVjN2E5ZjJkNGU2YjhhMGMxZTNmNWE3YjlkMmM0ZTZmOGEwYiJdLCJyZXBvcnRlciI6eyJpZCI6ImV1LXdlc3QtMS9jb3JlZmxvdy1ldS13' +
    'ZXN0LTEiLCJzZXNzaW9uSWQiOiJjb3JlZmxvdy1ldS13ZXN0LTEtMjAyNi0xMi0wMSJ9LCJyZXNvbHZlZERpZ2VzdCI6InNoYTI1NjowYjNlOGMxZjVhOWQy' +
    'ZTdiNGM2YThmMGQxZTNiNWM3YTlmMmQ0ZTZiOGEwYzFlM2Y1YTdiOWQyYzRlNmY4YTBiIiwidmVyaWZpZWRTaW5jZSI6IjIwMjYtMTItMDVUMTM6MTE6MDku' +
    'NzYwWiJ9XSwicm9sbG91dCI6eyJnZW5lcmF0aW9uIjoxLCJpZCI6InJvXzQ2ZTZhZTIyLWNiYmYtNDQ4MS04MDA2LTVkNjU3YzA2ZmViMCIsIm1vZGUiOiJw' +
    'cm9tb3Rpb24iLCJyZWxlYXNlSWQiOiJyZWxfY2hlY2tvdXRfMGIzZThjMWY1YTlkIn0sInNlcnZpY2UiOnsiaWQiOiJzdmNfSEdRdC1mbkJGUEhsdEJkcyIs' +
    'Im5hbWUiOiJjaGVja291dCJ9LCJzaWduYXR1cmVWZXJpZmljYXRpb24iOm51bGwsInRhcmdldFNjb3BlIjp7Im5vZGVOYW1lcyI6WyJldS13ZXN0LTEtbm9k' +
    'ZS1hIiwiZXUtd2VzdC0xLW5vZGUtYiJdLCJyZXBsaWNhc1Blck5vZGUiOjIsInJlcXVpcmVkUmVwbGljYUNvdW50Ijo0fSwidmVyaWZpZWRBdCI6IjIwMjYt' +
    'MTItMDVUMTM6MTE6MDkuNzgwWiJ9LCJwcmVkaWNhdGVUeXBlIjoiaHR0cHM6Ly9zZXJ2ZS56b25lL2Nsb3VkbHktcmVsZWFzZS9ydW50aW1lLXZlcmlmaWNh' +
    'dGlvbi92MSIsInN1YmplY3QiOlt7ImRpZ2VzdCI6eyJzaGEyNTYiOiIwYjNlOGMxZjVhOWQyZTdiNGM2YThmMGQxZTNiNWM3YTlmMmQ0ZTZiOGEwYzFlM2Y1' +
    'YTdiOWQyYzRlNmY4YTBiIn0sIm5hbWUiOiJyZWdpc3RyeS5leGFtcGxlLmNvbS9zaG9wL2NoZWNrb3V0QHNoYTI1NjowYjNlOGMxZjVhOWQyZTdiNGM2YThm' +
    'MGQxZTNiNWM3YTlmMmQ0ZTZiOGEwYzFlM2Y1YTdiOWQyYzRlNmY4YTBiIn1dfQ==',
  signatures: attestationSignatureList,
};

const runtimeAttestation = {
  id: 'att_rv_svc_Q2hlY2tvdXQx_ro_5mQw1RzK3nBa',
  serviceId: 'svc_Q2hlY2tvdXQx',
  rolloutId: 'ro_5mQw1RzK3nBa',
  generation: 1,
  kind: 'runtime-verification',
  issuedAt: 1764580799780,
  keyId: '78ab5807117f5a11cc925987950583166503793c347c99b9f518a35522d2ec65',
  envelope,
  digest: '1f6242a19d9efc6c75f1d41cf3266bdd1636a9b446aadd1c42be531c4448dece',
  summaryEnvelope,
};

const recorded = {
  health: {
    status: 'ok',
  },
  ready: {
    status: 'ready',
  },
  cluster: {
    cluster: euWest1,
  },
  clusterList: {
    clusters: [
      euWest1,
    ],
  },
  serviceCreated: {
    service: {
      id: 'svc_Q2hlY2tvdXQx',
      data: {
        ...checkoutSettings,
      },
    },
  },
  serviceUpdated: {
    service: {
      id: 'svc_Q2hlY2tvdXQx',
      data: {
        ...checkoutSettings,
      },
    },
  },
  serviceList: {
    services: [
      {
        id: 'svc_Q2hlY2tvdXQx',
        name: 'checkout',
      },
    ],
  },
  service: {
    service: {
      id: 'svc_Q2hlY2tvdXQx',
      data: {
        ...checkoutSettings,
        immutableImageRequired: true,
        imageDeployment,
        imageRolloutStatus,
      },
    },
  },
  pushRecorded: {
    release,
    duplicate: false,
    autoPromotion: {
      outcome: 'skipped',
      reason: 'not-enabled',
    },
  },
  promoted: {
    service: {
      id: 'svc_Q2hlY2tvdXQx',
      data: {
        ...checkoutSettings,
        immutableImageRequired: true,
        imageDeployment,
        imageRolloutStatus: {
          rolloutId: 'ro_8kYd2LqP0xVt',
          rolloutGeneration: 2,
          expectedDigest: 'sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
          status: 'pending',
          requiredReplicaCount: 4,
          observedReplicaCount: 0,
          healthyReplicaCount: 0,
          verifiedReplicaCount: 0,
          failedReplicaCount: 0,
          updatedAt: 1764580799968,
          reporters: [],
        },
      },
    },
  },
  rolledBack: {
    service: {
      id: 'svc_Q2hlY2tvdXQx',
      data: {
        ...checkoutSettings,
        immutableImageRequired: true,
        imageDeployment: {
          policy: 'immutable-digest',
          rolloutId: 'ro_3TfH7uXe9cLs',
          rolloutGeneration: 3,
          releaseId: 'rel_checkout_0b3e8c1f5a9d',
          registryHost: 'registry.example.com',
          repository: 'shop/checkout',
          requestedDigest: 'sha256:0b3e8c1f5a9d2e7b4c6a8f0d1e3b5c7a9f2d4e6b8a0c1e3f5a7b9d2c4e6f8a0b',
          digestPinnedImageReference: 'registry.example.com/shop/checkout@sha256:0b3e8c1f5a9d2e7b4c6a8f0d1e3b5c7a9f2d4e6b8a0c1e3f5a7b9d2c4e6f8a0b',
          manifestMediaType: 'application/vnd.oci.image.index.v1+json',
          createdAt: 1764580800215,
          mode: 'rollback',
          targetScope,
          rollbackOfRolloutId: 'ro_8kYd2LqP0xVt',
        },
        imageRolloutStatus: {
          rolloutId: 'ro_3TfH7uXe9cLs',
          rolloutGeneration: 3,
          expectedDigest: 'sha256:0b3e8c1f5a9d2e7b4c6a8f0d1e3b5c7a9f2d4e6b8a0c1e3f5a7b9d2c4e6f8a0b',
          status: 'rolling-back',
          requiredReplicaCount: 4,
          observedReplicaCount: 0,
          healthyReplicaCount: 0,
          verifiedReplicaCount: 0,
          failedReplicaCount: 0,
          updatedAt: 1764580800215,
          reporters: [],
        },
      },
    },
  },
  snapshotReport: {
    outcome: 'applied',
    status: {
      rolloutId: 'ro_5mQw1RzK3nBa',
      rolloutGeneration: 1,
      expectedDigest: 'sha256:0b3e8c1f5a9d2e7b4c6a8f0d1e3b5c7a9f2d4e6b8a0c1e3f5a7b9d2c4e6f8a0b',
      status: 'succeeded',
      requiredReplicaCount: 4,
      observedReplicaCount: 4,
      healthyReplicaCount: 4,
      verifiedReplicaCount: 4,
      failedReplicaCount: 0,
      updatedAt: 1764580799780,
    },
  },
  rolloutView: {
    serviceId: 'svc_Q2hlY2tvdXQx',
    plan: imageDeployment,
    status: imageRolloutStatus,
    revision: 4,
    reporters: [
      {
        reporterId: 'eu-west-1/coreflow-eu-west-1',
        clusterId: 'eu-west-1',
        reporterSessionId: 'coreflow-eu-west-1-2026-12-01',
        lastSequence: 2,
        lastReportAt: 1764580800001,
        lastReceivedAt: 1764580800011,
        observedGeneration: 2,
        nodeNames: [
          'eu-west-1-node-a',
          'eu-west-1-node-b',
        ],
        requiredReplicaCount: 4,
        observedReplicaCount: 2,
        healthyReplicaCount: 2,
        verifiedReplicaCount: 2,
        failedReplicaCount: 0,
        replicas: [
          verifiedReplica('eu-west-1-node-a-task-0'),
          verifiedReplica('eu-west-1-node-a-task-1'),
        ],
      },
    ],
    blocking: [
      {
        kind: 'replicas-missing',
        reason: 'required-replica-missing',
        nodeName: 'eu-west-1-node-b',
        reporterId: 'eu-west-1/coreflow-eu-west-1',
        missingReplicaCount: 2,
        detail: 'node \'eu-west-1-node-b\' runs 0 of 2 required replicas: 2 missing',
      },
    ],
    lifecycle: {
      policy: {
        progressDeadlineSeconds: 600,
        stabilityWindowSeconds: 0,
        clockToleranceSeconds: 5,
        autoRollback: {
          enabled: false,
          triggers: [
            'failed',
            'mismatched',
            'deadline',
          ],
        },
        automaticPromotion: {},
      },
      lastProgressAt: 1764580800031,
      deadlineAt: 1764581400031,
    },
  },
  deployments: {
    deployments: [
      {
        clusterId: 'eu-west-1',
        reporterId: 'eu-west-1/coreflow-eu-west-1',
        reportedAt: 1764580800001,
        receivedAt: 1764580800011,
        deployment: {
          id: 'eu-west-1-node-a-task-0',
          serviceId: 'svc_Q2hlY2tvdXQx',
          deploymentLog: [],
          status: 'running',
          nodeName: 'eu-west-1-node-a',
          rolloutId: 'ro_8kYd2LqP0xVt',
          rolloutGeneration: 2,
          runtimeImageEvidence: {
            observedAt: 1764580800001,
            verificationStatus: 'verified',
            rolloutId: 'ro_8kYd2LqP0xVt',
            rolloutGeneration: 2,
            expectedDigest: 'sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
            serviceImageReference: 'registry.example.com/shop/checkout@sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
            taskImageReference: 'registry.example.com/shop/checkout@sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
            taskReportedDigest: 'sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
            containerImageId: 'sha256:0b0d57610db5a3f24056819fc0fda2002871a640770068e241f5c901940708a7',
            containerConfigImageReference: 'registry.example.com/shop/checkout@sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
            resolvedDigest: 'sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
            repoDigests: [
              'registry.example.com/shop/checkout@sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
            ],
            evidenceSource: 'local-container-inspect',
          },
        },
      },
    ],
    rolloutId: 'ro_8kYd2LqP0xVt',
  },
  releases: {
    releases: [
      {
        id: release.id,
        data: {
          ...data,
          acceptedAt: 1764580799968,
          lastPromotedAt: 1764580799968,
          promotionCount: 1,
        },
      },
      {
        id: 'rel_checkout_0b3e8c1f5a9d',
        data: {
          serviceId: 'svc_Q2hlY2tvdXQx',
          imageId: 'img-checkout',
          registryHost: 'registry.example.com',
          repository: 'shop/checkout',
          registryRootDigest: 'sha256:0b3e8c1f5a9d2e7b4c6a8f0d1e3b5c7a9f2d4e6b8a0c1e3f5a7b9d2c4e6f8a0b',
          digestPinnedImageReference: 'registry.example.com/shop/checkout@sha256:0b3e8c1f5a9d2e7b4c6a8f0d1e3b5c7a9f2d4e6b8a0c1e3f5a7b9d2c4e6f8a0b',
          manifestMediaType: 'application/vnd.oci.image.index.v1+json',
          observedTags: [
            '1.4.1',
          ],
          firstObservedAt: 1764577199285,
          lastObservedAt: 1764577199285,
          observationCount: 1,
          acceptedAt: 1764580799420,
          lastPromotedAt: 1764580799420,
          promotionCount: 1,
        },
      },
    ],
    lastSucceededAt: {
      rel_checkout_0b3e8c1f5a9d: 1764580799780,
    },
  },
  tagHistory: {
    tag: '1.4.2',
    entries: [
      {
        eventId: 'evt_2026-12-01T09-30-12Z_7f3a',
        releaseId: 'rel_checkout_4f9c3b2a7d1e',
        registryRootDigest: 'sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
        digestPinnedImageReference: 'registry.example.com/shop/checkout@sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
        observedAt: 1764580739364,
      },
    ],
  },
  deliveryMetrics: {
    serviceId: 'svc_Q2hlY2tvdXQx',
    window: {
      from: 1761988800155,
      to: 1764580800155,
      days: 30,
    },
    deploymentFrequency: {
      deployments: 1,
      perDay: 0.03333333333333333,
    },
    leadTime: {
      count: 1,
      medianSeconds: 3600.495,
      meanSeconds: 3600.495,
    },
    changeFailureRate: {
      changes: 1,
      failedChanges: 0,
      rate: 0,
    },
    timeToRestore: {
      restored: 0,
      unrestored: 0,
    },
  },
  attestation: {
    attestation: runtimeAttestation,
  },
  attestationKeys: {
    keys: [
      {
        keyId: '78ab5807117f5a11cc925987950583166503793c347c99b9f518a35522d2ec65',
        algorithm: 'ed25519',
        publicKeyPem: '-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAmo6mD75tK/i5oC6F/yC2dmZykfcRegYbagEsUXwqWBo=\n-----END PUBLIC KEY-----\n',
        retired: false,
      },
    ],
  },
  rolloutHistory: {
    rollouts: [
      {
        rolloutId: 'ro_3TfH7uXe9cLs',
        generation: 3,
        mode: 'rollback',
        releaseId: 'rel_checkout_0b3e8c1f5a9d',
        requestedDigest: 'sha256:0b3e8c1f5a9d2e7b4c6a8f0d1e3b5c7a9f2d4e6b8a0c1e3f5a7b9d2c4e6f8a0b',
        digestPinnedImageReference: 'registry.example.com/shop/checkout@sha256:0b3e8c1f5a9d2e7b4c6a8f0d1e3b5c7a9f2d4e6b8a0c1e3f5a7b9d2c4e6f8a0b',
        targetScope,
        issuedBy: {
          subject: 'ci-bot',
          role: 'api',
          type: 'machine',
        },
        reason: 'error rate above 2 % after 1.4.2',
        automationHold: 'set',
        state: 'applied',
        idempotencyKeyHash: 'd465c7d5bb655ef9ee92bff24f846c5afd57694dfcb185be4bd09c3cef97c84b',
        createdAt: 1764580800215,
        outcome: 'in-progress',
        rollbackOfRolloutId: 'ro_8kYd2LqP0xVt',
        previous: {
          rolloutId: 'ro_8kYd2LqP0xVt',
          releaseId: 'rel_checkout_4f9c3b2a7d1e',
          requestedDigest: 'sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
        },
      },
      {
        rolloutId: 'ro_8kYd2LqP0xVt',
        generation: 2,
        mode: 'promotion',
        releaseId: 'rel_checkout_4f9c3b2a7d1e',
        requestedDigest: 'sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
        digestPinnedImageReference: 'registry.example.com/shop/checkout@sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
        targetScope,
        issuedBy: {
          subject: 'ci-bot',
          role: 'api',
          type: 'machine',
        },
        reason: 'release 1.4.2 passed the staging checks',
        automationHold: 'unchanged',
        state: 'applied',
        idempotencyKeyHash: '378e70b65a5af9e87e49030ccc40142dd67b61e45ccd80dd950609d9e867feb6',
        createdAt: 1764580799968,
        outcome: 'rolled-back',
        previous: {
          rolloutId: 'ro_5mQw1RzK3nBa',
          releaseId: 'rel_checkout_0b3e8c1f5a9d',
          requestedDigest: 'sha256:0b3e8c1f5a9d2e7b4c6a8f0d1e3b5c7a9f2d4e6b8a0c1e3f5a7b9d2c4e6f8a0b',
        },
        endedAt: 1764580800215,
        endedBy: {
          kind: 'rolled-back',
          rolloutId: 'ro_3TfH7uXe9cLs',
        },
      },
      {
        rolloutId: 'ro_5mQw1RzK3nBa',
        generation: 1,
        mode: 'promotion',
        releaseId: 'rel_checkout_0b3e8c1f5a9d',
        requestedDigest: 'sha256:0b3e8c1f5a9d2e7b4c6a8f0d1e3b5c7a9f2d4e6b8a0c1e3f5a7b9d2c4e6f8a0b',
        digestPinnedImageReference: 'registry.example.com/shop/checkout@sha256:0b3e8c1f5a9d2e7b4c6a8f0d1e3b5c7a9f2d4e6b8a0c1e3f5a7b9d2c4e6f8a0b',
        targetScope,
        issuedBy: {
          subject: 'ci-bot',
          role: 'api',
          type: 'machine',
        },
        reason: 'release 1.4.1',
        automationHold: 'unchanged',
        state: 'applied',
        idempotencyKeyHash: 'ec971d3e388aeb4143677ae0ae4533832d25f2d8d5fdfdfb5b3fee6f0cde5ddd',
        createdAt: 1764580799420,
        outcome: 'succeeded',
        succeededAt: 1764580799780,
        endedAt: 1764580799968,
        endedBy: {
          kind: 'superseded',
          rolloutId: 'ro_8kYd2LqP0xVt',
        },
      },
    ],
  },
  promotionRequests: {
    promotionRequests: [
      pendingRequest,
    ],
  },
  promotionRequest: {
    promotionRequest: pendingRequest,
  },
  approved: {
    promotionRequest: {
      ...pendingRequest,
      approvals: [
        {
          subject: 'alice@example.com',
          role: 'admin',
          at: 1764580800668,
        },
      ],
    },
  },
  webhookCreated: {
    subscription,
    secret: 'whsec_MfKQ9PXlzNtW8ZwQvQ7mP0v1Jc2bYkG4hR6sT8uV0xA=',
  },
  webhookList: {
    subscriptions: [
      subscription,
    ],
  },
  webhook: {
    subscription,
  },
  webhookUpdated: {
    subscription: {
      id: 'whsub_7Hc2LkQ9pZxAa1Bf',
      url: 'https://hooks.example.com/cloudly',
      types: [],
      services: {
        all: true,
      },
      enabled: true,
      timeoutMs: 10000,
      health: 'healthy',
      secretCount: 1,
      createdAt: 1764580800684,
      updatedAt: 1764580800763,
      description: 'release notifications',
    },
  },
  webhookSecretRotated: {
    subscription: {
      id: 'whsub_7Hc2LkQ9pZxAa1Bf',
      url: 'https://hooks.example.com/cloudly',
      types: [],
      services: {
        all: true,
      },
      enabled: true,
      timeoutMs: 10000,
      health: 'healthy',
      secretCount: 2,
      createdAt: 1764580800684,
      updatedAt: 1764580800783,
      description: 'release notifications',
    },
    secret: 'whsec_2yXq6LbR0sNcV4dT8wE1fH3jK5mP7rU9zA2cE4gI6kM=',
    previousSecretValidUntil: '2025-12-03T10:20:00.000Z',
  },
  webhookDeleted: {
    deleted: true,
  },
  attestationPage: {
    attestations: [
      runtimeAttestation,
    ],
  },
  pushReplayed: {
    release,
    duplicate: true,
    autoPromotion: {
      outcome: 'skipped',
      reason: 'not-enabled',
    },
  },
  releaseVerification: {
    releaseId: 'rel_checkout_4f9c3b2a7d1e',
    verification: {
      verdict: 'passed',
      verifiedAt: 1764581470000,
      image: 'registry.example.com/shop/checkout@sha256:4f9c3b2a7d1e8f6a5b0c9d2e3f4a1b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a',
      policyDigest: 'a6406328a2f97918fbe10d23903e7ed0aea75dce48f1bc3e924cfe06f8b0d10b',
      signers: [
        {
          keyId: 'ci',
        },
      ],
      attestations: [
        {
          predicateType: 'https://slsa.dev/provenance/v1',
          signer: {
            keyId: 'ci',
          },
        },
      ],
      summary: {
        envelope,
        digest: 'sha256:5d41c1f0b7a3e9d2c8b6a4f0e2d4c6b8a0f2e4d6c8b0a2f4e6d8c0b2a4f6e8d0',
        keyId: '78ab5807117f5a11cc925987950583166503793c347c99b9f518a35522d2ec65',
      },
    },
  },
};

/** `GET /metrics`: the head of a Prometheus exposition. */
const metrics = [
  '# HELP http_request_duration_seconds Duration of HTTP requests by route pattern',
  '# TYPE http_request_duration_seconds histogram',
  'http_request_duration_seconds_bucket{le="0.05",method="GET",route="/v1/services/:serviceId/rollout",status_code="200"} 1873',
  'http_request_duration_seconds_count{method="GET",route="/v1/services/:serviceId/rollout",status_code="200"} 1880',
  'http_request_duration_seconds_sum{method="GET",route="/v1/services/:serviceId/rollout",status_code="200"} 21.4',
  '',
].join('\n');

/** One event of `GET …/rollout/events` as an EventSource parses it: `data` is the StatusEvent's JSON text. */
const statusEvent = {
  event: 'status',
  id: '7',
  data: JSON.stringify({
    revision: 7,
    rolloutId: 'ro_8kYd2LqP0xVt',
    rolloutGeneration: 2,
    status: 'deploying',
    at: 1764584370016,
    requiredReplicaCount: 4,
    observedReplicaCount: 2,
    healthyReplicaCount: 2,
    verifiedReplicaCount: 2,
    failedReplicaCount: 0,
  }),
  retry: 2000,
};

/** `POST /typedrequest`: the answer envelope of `getServiceById` (every answer is HTTP 200; a failure fills `error`). */
const typedRequestAnswer = {
  method: 'getServiceById',
  request: { identity: { jwt: "<the caller's JWT>" }, serviceId: 'svc_Q2hlY2tvdXQx' },
  response: recorded.service,
  correlation: { id: 'c0ffee00-1d2e-4f3a-9b8c-7d6e5f4a3b2c', phase: 'response' },
};

/** Webhook deliveries: one failed attempt, then its retry delivered. */
const webhookDeliveries = {
  deliveries: [
    { eventId: 'evt_000000000042', type: 'rollout.succeeded', attempt: 2, at: 1764584412000, latencyMs: 87, outcome: 'delivered', statusCode: 204 },
    {
      eventId: 'evt_000000000042',
      type: 'rollout.succeeded',
      attempt: 1,
      at: 1764584402000,
      latencyMs: 10000,
      outcome: 'retry',
      error: 'timed out after 10000 ms',
    },
  ],
};

/** A dead letter: the receiver answered 410 Gone until the attempts ran out. */
const webhookDeadLetters = {
  deadLetters: [{
    eventId: 'evt_000000000039',
    serviceId: 'svc_Q2hlY2tvdXQx',
    attempts: 8,
    deadAt: 1764583812000,
    lastError: 'HTTP 410 Gone',
    state: 'dead',
    event: {
      specversion: '1.0',
      id: 'evt_000000000039',
      type: 'rollout.issued',
      source: '/v1/services/svc_Q2hlY2tvdXQx',
      time: '2025-12-01T09:41:50.000Z',
      data: { serviceId: 'svc_Q2hlY2tvdXQx', rolloutId: 'ro_8kYd2LqP0xVt', generation: 2 },
    },
  }],
};

export const responseExamples = {
  ...recorded,
  // abort answers the service after the rollback it issued, as rollback does.
  aborted: recorded.rolledBack,
  metrics,
  statusEvent,
  typedRequestAnswer,
  webhookDeliveries,
  webhookDeadLetters,
  redeliveredAll: { queued: 1 },
  redelivered: { queued: 1 },
};
