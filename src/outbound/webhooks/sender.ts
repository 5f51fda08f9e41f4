import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { CloudEvent } from 'cloudevents';
import { Webhook } from 'standardwebhooks';
import type { WebhookFailure, WebhookRequest, WebhookSender, WebhookTargets } from '../../domain/ports/webhooks.js';
import type { CloudEventJson } from '../../domain/webhooks.js';
import { AddressPolicy, AddressRefused } from './addressPolicy.js';

/** The most of an answer's body read (the rest is not waited for); the excerpt kept in the delivery log is shorter. */
const MAX_ANSWER_BYTES = 64 * 1024;
const EXCERPT_CHARS = 512;

type Sent = Awaited<ReturnType<WebhookSender['send']>>;

/** The Standard Webhooks signature header: `v1,<base64 HMAC-SHA256>` per secret, space-separated (rotation signs with both). */
export function signatureHeader (secrets: readonly string[], eventId: string, at: Date, body: string): string {
  return secrets.map((secret) => new Webhook(secret).sign(eventId, at, body)).join(' ');
}

/**
 * The webhook sender: one POST per attempt, bounded in every way — a total timeout (the
 * subscription's, covering connect, answer and body), a bounded read of the answer, no redirect
 * followed (a 3xx is the receiver's answer), and the address policy at connect time (SSRF).
 * Signed per Standard Webhooks (`webhook-id` = the event id, `webhook-timestamp`,
 * `webhook-signature`) with the reference library receivers verify with.
 */
export class HttpWebhookSender implements WebhookSender {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor (private readonly policy: AddressPolicy) {
    this.httpAgent = new http.Agent({ keepAlive: true, maxSockets: 32, lookup: policy.lookup } as http.AgentOptions);
    this.httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 32, lookup: policy.lookup } as https.AgentOptions);
  }

  async send (request: WebhookRequest): Promise<Sent> {
    const started = performance.now();
    const elapsed = (): number => Math.round(performance.now() - started);
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return { ok: false, failure: 'not-allowed', message: 'not a URL', latencyMs: 0 };
    }
    const literal = url.hostname.replace(/^\[|\]$/g, '');
    if (!this.policy.hostListed(literal) && /^[\d.]+$|:/.test(literal) && !this.policy.addressAllowed(literal)) {
      const message = `${literal} is a loopback, link-local or private address not in WEBHOOK_ALLOWED_HOSTS`;
      return { ok: false, failure: 'not-allowed', message, latencyMs: 0 };
    }
    const at = new Date();
    const headers = {
      'content-type': 'application/cloudevents+json; charset=utf-8',
      'content-length': String(Buffer.byteLength(request.body)),
      'user-agent': 'cloudly-release-webhooks/1',
      'webhook-id': request.eventId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signatureHeader(request.secrets, request.eventId, at, request.body),
    };
    const outcome = await this.exchange(url, headers, request.body, request.timeoutMs);
    return 'status' in outcome
      ? { ok: true, answer: outcome, latencyMs: elapsed() }
      : { ok: false, failure: outcome.failure, message: outcome.message, latencyMs: elapsed() };
  }

  private exchange (url: URL, headers: Record<string, string>, body: string, timeoutMs: number):
  Promise<{ status: number, retryAfter?: string, excerpt: string } | { failure: WebhookFailure, message: string }> {
    return new Promise((resolve) => {
      let settled = false;
      const settle = (value: Parameters<typeof resolve>[0]): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      };
      const timer = setTimeout(() => {
        settle({ failure: 'timeout', message: `no complete answer within ${timeoutMs} ms` });
        req.destroy();
      }, timeoutMs);
      const send = url.protocol === 'https:' ? https.request : http.request;
      const req = send(url, { method: 'POST', headers, agent: url.protocol === 'https:' ? this.httpsAgent : this.httpAgent }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = (): void => {
          const retryAfter = res.headers['retry-after'];
          const excerpt = Buffer.concat(chunks).toString('utf8').slice(0, EXCERPT_CHARS);
          settle({ status: res.statusCode ?? 0, ...(retryAfter === undefined ? {} : { retryAfter }), excerpt });
        };
        res.on('data', (chunk: Buffer) => {
          if (size < MAX_ANSWER_BYTES) chunks.push(chunk.subarray(0, MAX_ANSWER_BYTES - size));
          size += chunk.length;
          // Enough read: the status is what counts; the rest of a large answer is not waited for.
          if (size >= MAX_ANSWER_BYTES) {
            done();
            res.destroy();
          }
        });
        res.on('end', done);
        res.on('error', () => undefined);
        res.on('close', done);
      });
      req.on('error', (err) => {
        const refused = err instanceof AddressRefused;
        const code = (err as NodeJS.ErrnoException).code;
        settle({ failure: refused ? 'not-allowed' : 'unreachable', message: refused ? err.message : `${code ?? 'connection error'}: ${err.message}` });
      });
      req.end(body);
    });
  }

  close (): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/** The address check, secrets and serialization a subscription's writes and its delivery use. */
export class WebhookTargetRules implements WebhookTargets {
  constructor (private readonly policy: AddressPolicy) {}

  async check (url: URL): Promise<string | undefined> {
    return await this.policy.refusal(url.hostname);
  }

  newSecret (): string {
    return `whsec_${randomBytes(32).toString('base64')}`;
  }

  /** Structured JSON mode, through the CloudEvents SDK (which validates the attributes against the 1.0 spec). */
  serialize (event: CloudEventJson): string {
    return JSON.stringify(new CloudEvent<Record<string, unknown>>({ ...event }, true));
  }
}
