/**
 * The index plan: every query the service makes is served by one of these
 * indexes (README "Index plan" lists the queries next to them). Created at
 * start-up, idempotently. No partial indexes, and nothing relies on TTL expiry:
 * the local development database supports neither (DESIGN §2).
 */
export interface IndexPlanEntry {
  collection: string;
  name: string;
  key: Record<string, 1 | -1>;
  unique?: boolean;
  /** Which queries it serves (documentation, also printed in the README). */
  serves: string;
}

export const collections = {
  services: 'services',
  clusters: 'clusters',
  nodes: 'nodes',
  releases: 'releases',
  pushEvents: 'pushEvents',
  rollouts: 'rollouts',
  idempotency: 'idempotency',
} as const;

export const indexPlan: readonly IndexPlanEntry[] = [
  {
    collection: collections.services,
    name: 'services_name_unique',
    key: { 'data.name': 1 },
    unique: true,
    serves: 'createService/updateService: one service per name',
  },
];
