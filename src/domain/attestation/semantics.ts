import { accept, refuse, type Checked } from './refusal.js';
import type { ChainLink, RevocationPredicate, RuntimeVerificationPredicate } from './schemas.js';

/**
 * What a schema cannot say: the members of a predicate that must agree with each other. A signed
 * statement that breaks one of these was issued wrong (or by a key that should not be trusted), and
 * is refused all the same.
 */

function checkLink (chain: ChainLink, what: string): Checked<true> {
  if ((chain.sequence === 1) !== (chain.previousEnvelopeDigest === null)) {
    return refuse('chain-link-invalid', `${what} has chain sequence ${chain.sequence} with ` +
      `${chain.previousEnvelopeDigest === null ? 'no previous attestation' : 'a previous attestation'}: only the first (sequence 1) has none`);
  }
  return accept(true);
}

/** Every required replica exactly once: replicasPerNode on each target node, none elsewhere, none twice. */
function checkReplicas (p: RuntimeVerificationPredicate): Checked<true> {
  const scope = p.targetScope;
  const seen = new Set<string>();
  const perNode = new Map<string, number>(scope.nodeNames.map((name) => [name, 0]));
  for (const replica of p.replicas) {
    if (seen.has(replica.deploymentId)) {
      return refuse('replicas-duplicated', `replica '${replica.deploymentId}' is listed more than once`);
    }
    seen.add(replica.deploymentId);
    const count = perNode.get(replica.nodeName);
    if (count === undefined) {
      return refuse('replica-outside-scope', `replica '${replica.deploymentId}' runs on node '${replica.nodeName}', which is not a target node`);
    }
    perNode.set(replica.nodeName, count + 1);
  }
  for (const [node, count] of perNode) {
    if (count !== scope.replicasPerNode) {
      return refuse('replicas-incomplete', `node '${node}' has ${count} attested replica${count === 1 ? '' : 's'}, ` +
        `the plan requires ${scope.replicasPerNode} per node`);
    }
  }
  return accept(true);
}

export function checkRuntimeVerification (p: RuntimeVerificationPredicate, subjectName: string): Checked<true> {
  if ((p.rollout.mode === 'rollback') !== (p.outcome === 'rolled-back')) {
    return refuse('predicate-inconsistent', `outcome '${p.outcome}' does not go with rollout mode '${p.rollout.mode}' ` +
      '(a rollback ends rolled-back, a promotion succeeded)');
  }
  const scope = p.targetScope;
  if (scope.requiredReplicaCount !== scope.nodeNames.length * scope.replicasPerNode) {
    return refuse('predicate-inconsistent', `requiredReplicaCount ${scope.requiredReplicaCount} is not ${scope.nodeNames.length} target nodes × ` +
      `${scope.replicasPerNode} replicas per node`);
  }
  const replicas = checkReplicas(p);
  if (!replicas.ok) return replicas;
  const unbound = p.replicas.find((r) => !r.repoDigests.includes(subjectName));
  if (unbound !== undefined) {
    return refuse('replica-evidence-mismatch', `replica '${unbound.deploymentId}' on node '${unbound.nodeName}': its repo digests ` +
      `(${unbound.repoDigests.join(', ')}) do not contain ${subjectName}`);
  }
  return checkLink(p.chain, 'the runtime verification');
}

const stateOfKind = { 'replica-mismatched': 'mismatched', 'replica-failed': 'failed', 'replica-missing': 'missing' } as const;

export function checkRevocation (p: RevocationPredicate): Checked<true> {
  const state = stateOfKind[p.reason.kind];
  if (!p.evidence.some((e) => e.state === state)) {
    return refuse('predicate-inconsistent', `the reason is '${p.reason.kind}' but no evidence shows a ${state} replica`);
  }
  if (p.chain.sequence < 2) {
    return refuse('chain-link-invalid', 'a revocation has chain sequence 1: it must follow the attestation it revokes');
  }
  return checkLink(p.chain, 'the revocation');
}
