import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTokenVerifier } from '../../../src/http/auth.js';
import { mintToken } from '../../../src/domain/tokens.js';

/**
 * The verifier keeps the tokens it accepted (an agent sends the same token with every report);
 * what it promises stays the same: a token is accepted only while it has not expired, and only
 * with the signature of this verifier's key.
 */
describe('token verification with accepted tokens kept', () => {
  const secret = 'unit-test-secret-0123456789abcdef0123456789';
  afterEach(() => { vi.useRealTimers(); });

  it('a token accepted once is refused from its expiry on', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-12-01T12:00:00Z'));
    const verifier = await createTokenVerifier({ kind: 'secret', secret });
    const token = await mintToken({ kind: 'secret', secret }, { subject: 'coreflow-a', role: 'cluster', clusterId: 'c1', ttlSeconds: 60 });
    await expect(verifier.verify(token)).resolves.toEqual({
      subject: 'coreflow-a', role: 'cluster', type: 'machine', clusterId: 'c1', expiresAt: Date.parse('2026-12-01T12:01:00Z'),
    });
    vi.setSystemTime(new Date('2026-12-01T12:00:59.999Z'));
    await expect(verifier.verify(token)).resolves.toMatchObject({ subject: 'coreflow-a' });
    vi.setSystemTime(new Date('2026-12-01T12:01:00Z'));
    await expect(verifier.verify(token)).rejects.toMatchObject({ code: 'unauthenticated', message: expect.stringContaining('expired') });
  });

  it('another key\'s token is refused, also after a token of the right key was accepted', async () => {
    const verifier = await createTokenVerifier({ kind: 'secret', secret });
    const good = await mintToken({ kind: 'secret', secret }, { subject: 'ci', role: 'api' });
    const forged = await mintToken({ kind: 'secret', secret: `${secret}-other` }, { subject: 'ci', role: 'api' });
    await expect(verifier.verify(good)).resolves.toMatchObject({ subject: 'ci', role: 'api' });
    await expect(verifier.verify(forged)).rejects.toMatchObject({ code: 'unauthenticated' });
    // The same claims with the signature of the accepted one cut off: not the accepted text, so verified again.
    await expect(verifier.verify(good.slice(0, -2))).rejects.toMatchObject({ code: 'unauthenticated' });
  });

  it('the principal handed out cannot be changed by a caller', async () => {
    const verifier = await createTokenVerifier({ kind: 'secret', secret });
    const token = await mintToken({ kind: 'secret', secret }, { subject: 'ops', role: 'user' });
    const principal = await verifier.verify(token);
    expect(() => { (principal as { role: string }).role = 'admin'; }).toThrow(TypeError);
    await expect(verifier.verify(token)).resolves.toMatchObject({ role: 'user' });
  });
});
