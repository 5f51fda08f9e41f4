import { BSON } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { storedBytes } from '../../../src/store/reportStore.js';

/**
 * The record size check (`ReportStore.oversized`) counts the deployments text by its UTF-8 bytes
 * instead of walking it with BSON's size calculation: the two must agree to the byte, whatever
 * the text holds, or a record just over the 16 MiB document limit would pass the check.
 */
describe('a stored record\'s size', () => {
  const head = {
    _id: 'rollout:ro-1:cluster-a',
    version: 7,
    fence: 'rollout:ro-1:cluster-a@7',
    nodeNames: ['node-1', 'node-ü'],
    replicas: [{ nodeName: 'node-1', deploymentId: 'd-1', counted: true, firstVerifiedAt: 1_700_000_000_000 }],
    position: { sessionId: 's', sequence: 3, reportedAt: 1, receivedAt: 2 },
  };
  const texts = {
    empty: '',
    ASCII: JSON.stringify([{ id: 'd-1', nodeName: 'node-1', status: 'running' }]),
    'two-byte characters': JSON.stringify([{ id: 'é'.repeat(1_000) }]),
    'three-byte characters': JSON.stringify([{ id: '€漢'.repeat(700) }]),
    'surrogate pairs (four bytes)': JSON.stringify([{ id: '🚀'.repeat(900) }]),
    'a lone surrogate (written as U+FFFD)': `["\ud800${'x'.repeat(10)}"]`,
    'a NUL character': '["a\u0000b"]',
  };
  for (const [what, deploymentsJson] of Object.entries(texts)) {
    it(`equals BSON's own count: ${what}`, () => {
      const document = { ...head, deploymentsJson };
      expect(storedBytes(document)).toBe(BSON.calculateObjectSize(document));
    });
  }
});
