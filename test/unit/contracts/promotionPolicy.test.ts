/**
 * The promotion policy schemas accept the documented examples and reject what they must,
 * identically under TypeBox's Value.Check and Ajv in strict mode (how the HTTP layer validates).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { GlobalGovernance, IPromotionPolicy } from '../../../src/contracts/promotionPolicy.js';
import { globalGovernanceProblems, promotionPolicyProblems } from '../../../src/domain/governance/policy.js';

const ajv = new Ajv({ strict: true, allErrors: false, removeAdditional: false, coerceTypes: false });
const verdict = (schema: TSchema, value: unknown): boolean => {
  const byValue = Value.Check(schema, value);
  expect(ajv.compile(schema)(value), 'Ajv agrees with TypeBox').toBe(byValue);
  return byValue;
};

const example = {
  pipeline: { requires: [{ serviceId: 'svc-staging', soakSeconds: 3600 }], automaticPromotion: { enabled: true } },
  approvals: {
    required: 2, approvers: [{ role: 'admin' }, { subject: 'release-manager', role: 'user' }], appliesTo: ['promotion', 'rollback'], requestTtlSeconds: 7200,
  },
  windows: [
    { name: 'weekend-freeze', kind: 'deny', start: '2025-01-03T16:00', timeZone: 'Europe/Berlin', rrule: 'FREQ=WEEKLY;BYDAY=FR', duration: 'P2DT12H' },
    {
      name: 'office-hours',
      kind: 'allow',
      start: '2025-01-06T09:00:00',
      timeZone: 'Europe/Berlin',
      rrule: 'FREQ=WEEKLY;BYDAY=MO,TU,WE,TH',
      durationSeconds: 28_800,
    },
  ],
  breakGlass: { allowed: true, maxSeconds: 1800 },
};

describe('data.promotionPolicy', () => {
  it('accepts the documented example and the empty policy', () => {
    expect(verdict(IPromotionPolicy, example)).toBe(true);
    expect(verdict(IPromotionPolicy, {})).toBe(true);
  });

  it('rejects unknown members, an approver naming nobody, the cluster role, a window name with spaces, a zero duration, an empty pipeline', () => {
    const refused: unknown[] = [
      { ...example, extra: true },
      { approvals: { required: 1, approvers: [{}] } },
      { approvals: { required: 1, approvers: [{ role: 'cluster' }] } },
      { approvals: { required: 0, approvers: [{ role: 'admin' }] } },
      { approvals: { required: 1, approvers: [{ role: 'admin' }], appliesTo: ['automatic-rollback'] } },
      { windows: [{ ...example.windows[1], name: 'office hours' }] },
      { windows: [{ ...example.windows[1], durationSeconds: 0 }] },
      { windows: [{ ...example.windows[1], start: '2025-01-06 09:00' }] },
      { windows: [{ ...example.windows[1], kind: 'maybe' }] },
      { pipeline: { requires: [] } },
      { pipeline: { requires: [{ serviceId: 'a', soakSeconds: -1 }] } },
      { breakGlass: { allowed: true, maxSeconds: 59 } },
    ];
    for (const value of refused) expect(verdict(IPromotionPolicy, value), JSON.stringify(value)).toBe(false);
  });
});

describe('GlobalGovernance', () => {
  it('accepts windows and a stop-the-line, on or off', () => {
    expect(verdict(GlobalGovernance, { windows: example.windows, stopTheLine: { active: true, reason: 'incident 42', by: 'alice', since: 1_800_000_000_000 } }))
      .toBe(true);
    expect(verdict(GlobalGovernance, { stopTheLine: { active: false } })).toBe(true);
    expect(verdict(GlobalGovernance, { stopTheLine: { active: true, reason: 'bad\u0007' } })).toBe(false);
  });
});

describe('the examples of docs/governance.md', () => {
  it('are valid, by the schema and by the checks the schema cannot make', async () => {
    const doc = await readFile(join(import.meta.dirname, '..', '..', '..', 'docs', 'governance.md'), 'utf8');
    const blocks = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1] as string) as Record<string, unknown>);
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    for (const block of blocks) {
      if ('promotionPolicy' in block) {
        expect(verdict(IPromotionPolicy, block['promotionPolicy']), JSON.stringify(block)).toBe(true);
        expect(promotionPolicyProblems(block['promotionPolicy'] as IPromotionPolicy, '/promotionPolicy')).toEqual([]);
      } else {
        expect(verdict(GlobalGovernance, block['globalGovernance']), JSON.stringify(block)).toBe(true);
        expect(globalGovernanceProblems(block['globalGovernance'] as GlobalGovernance, '/globalGovernance')).toEqual([]);
      }
    }
  });
});
