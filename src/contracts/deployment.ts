/**
 * Upstream `ts/data/deployment.ts` `IDeployment` (11.3.0): "a deployment happens when
 * a service is deployed; tracks the status of a deployment".
 *
 * Visible in the diff: `slot?`, `desiredState?`, and the 11.3.0 additions `rolloutId?`,
 * `rolloutGeneration?`, `runtimeImageEvidence?`.
 * Modeled (hidden by the diff): `id`, `serviceId`, `nodeName?`, `nodeId?`,
 * `containerId?`, `usedImageId?`, `deploymentLog`, `status` (Cloudly's deployment
 * lifecycle vocabulary), `deployedAt?`.
 */
import { Type, type Static } from '@sinclair/typebox';
import {
  Id,
  Name,
  NonNegativeSafeInteger,
  Timestamp,
  contractLimits,
  strictObject,
} from './common.js';
import { IRuntimeImageEvidence } from './immutableImage.js';
import { literalUnion } from './literals.js';

export const deploymentStatuses = [
  'scheduled',
  'starting',
  'running',
  'stopping',
  'stopped',
  'failed',
] as const;
export const TDeploymentStatus = literalUnion(deploymentStatuses);
export type TDeploymentStatus = Static<typeof TDeploymentStatus>;

export const IDeployment = strictObject({
  id: Id,
  serviceId: Id,
  nodeName: Type.Optional(Name),
  nodeId: Type.Optional(Id),
  containerId: Type.Optional(Id),
  /** Image used for this deployment. */
  usedImageId: Type.Optional(Id),
  /** Docker swarm task slot. */
  slot: Type.Optional(NonNegativeSafeInteger),
  /** Docker desired state for this task/deployment. */
  desiredState: Type.Optional(Type.String({ maxLength: 64 })),
  /** Immutable rollout generation represented by this task, when applicable. */
  rolloutId: Type.Optional(Id),
  rolloutGeneration: Type.Optional(NonNegativeSafeInteger),
  /** Evidence derived from Docker runtime state rather than service intent metadata. */
  runtimeImageEvidence: Type.Optional(IRuntimeImageEvidence),
  deploymentLog: Type.Array(Type.String({ maxLength: contractLimits.logLineLength }), {
    maxItems: contractLimits.deploymentLogLines,
  }),
  status: TDeploymentStatus,
  deployedAt: Type.Optional(Timestamp),
});
export type IDeployment = Static<typeof IDeployment>;
