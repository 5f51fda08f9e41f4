/**
 * Building blocks shared by the contract schemas: one place for the length and
 * size limits, so that every string that can end up in a database query or a
 * log line is bounded and every array has a ceiling.
 *
 * The limits are this project's choice (upstream declares plain `string`,
 * `number` and `T[]`); they are deliberately generous for real fleets.
 */
import { Type, type TProperties, type TObject } from '@sinclair/typebox';

export const contractLimits = {
  /** ids: service, release, rollout, event, image, user, cluster, node, session ids */
  idLength: 128,
  /** names: service, node, registry host, repository, tag-like names */
  nameLength: 256,
  /** OCI tags are at most 128 characters (distribution spec). */
  tagLength: 128,
  /** image references, image URLs, repo digests */
  referenceLength: 1024,
  descriptionLength: 4096,
  logLineLength: 4096,
  jwtLength: 16384,
  /** Idempotency keys: 1–255 visible ASCII characters (the same rule on REST's header and in TypedRequest payloads). */
  idempotencyKeyLength: 255,
  environmentValueLength: 32768,
  environmentEntries: 512,
  customPortEntries: 256,
  clusters: 256,
  nodes: 4096,
  /**
   * reporters of one rollout: each holds at least one of the rollout's target nodes, and a node one
   * reporter (src/domain/reports.ts), so a rollout has at most as many reporters as target nodes.
   */
  reporters: 4096,
  observedTags: 1024,
  repoDigests: 64,
  /**
   * deployments of one snapshot report: a full report of a 1,000-node cluster with up to 8 replicas per
   * node; the body limit (REPORT_BODY_LIMIT_BYTES) usually binds first — a larger cluster reports node by
   * node scope (`reporterNodeNames`), each report replacing only its nodes' deployments.
   */
  deploymentsPerReport: 8192,
  deploymentLogLines: 1000,
  deploymentIds: 10000,
  domains: 256,
  imageVersions: 10000,
  releasesPerResponse: 10000,
  /** replicas per node and scale factor */
  replicas: 1024,
} as const;

/**
 * Every object in the contract rejects unknown properties.
 * (Fastify's default Ajv options silently strip them instead — `removeAdditional: true`;
 * the HTTP layer must configure Ajv with `removeAdditional: false` to get rejection.)
 */
export const strictObject = <T extends TProperties>(properties: T): TObject<T> =>
  Type.Object(properties, { additionalProperties: false });

/**
 * An idempotency key: 1–255 visible ASCII characters (a UUID, a CI run id, …) — no spaces, no
 * control characters — in a header (REST) or a payload (TypedRequest) alike.
 */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7e]{1,255}$';
export const IdempotencyKey = Type.String({
  minLength: 1, maxLength: contractLimits.idempotencyKeyLength, pattern: IDEMPOTENCY_KEY_PATTERN, description: '1–255 visible ASCII characters',
});

/** Identifier: non-empty, bounded. */
export const Id = Type.String({ minLength: 1, maxLength: contractLimits.idLength });

/** A human or DNS-ish name: non-empty, bounded. */
export const Name = Type.String({
  minLength: 1,
  maxLength: contractLimits.nameLength,
  // No control characters and no bidirectional overrides: a name shown in the console or a terminal says what it is.
  pattern: '^[^\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]+$',
  description: 'no control characters or bidirectional overrides',
});

/** An image reference or URL: non-empty, bounded. */
export const Reference = Type.String({ minLength: 1, maxLength: contractLimits.referenceLength });

/** OCI tag: non-empty, at most 128 characters. */
export const Tag = Type.String({ minLength: 1, maxLength: contractLimits.tagLength });

/** A registry host (`host[:port]`); canonical form is checked by the upstream helpers. */
export const RegistryHost = Type.String({ minLength: 1, maxLength: contractLimits.nameLength });

/** A repository path; canonical form is checked by the upstream helpers. */
export const Repository = Type.String({ minLength: 1, maxLength: contractLimits.nameLength });

/** Milliseconds since the epoch: a safe non-negative integer. */
export const Timestamp = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

/**
 * Replica counts, rollout generations, report sequences: safe non-negative integers.
 * Rules such as "generation ≥ 1" belong to the upstream validators, which report
 * them with upstream's own messages.
 */
export const NonNegativeSafeInteger = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
