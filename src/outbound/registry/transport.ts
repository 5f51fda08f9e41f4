import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import type { RegistryHostSettings } from '../../registryConfig.js';
import { AddressNotAllowed, isPublicAddress, publicOnlyLookup } from './addresses.js';

/**
 * One HTTP exchange with a registry, bounded in every way: a connect timeout, a total timeout that
 * covers the body, a body limit (the declared length is refused before reading, the read is cut at
 * the limit), no redirect followed here, and the address rule of an unlisted host. Keep-alive agents
 * per host, so a promotion pays the TLS handshake once.
 */

export type TransportFailure = 'unreachable' | 'timeout' | 'too-large' | 'not-allowed';

export class TransportError extends Error {
  constructor (readonly reason: TransportFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransportError';
  }
}

export interface Exchange {
  method: 'GET' | 'HEAD' | 'PUT' | 'POST' | 'PATCH';
  url: URL;
  headers?: Record<string, string>;
  body?: Uint8Array;
  /** The largest response body accepted. */
  maxBytes: number;
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface TransportRules {
  /** Any address allowed (a configured host); else public addresses only. */
  anyAddress: boolean;
  ca?: string;
  connectTimeoutMs: number;
  timeoutMs: number;
}

export const rulesOf = (settings: RegistryHostSettings): TransportRules => ({
  anyAddress: settings.configured,
  ...(settings.ca === undefined ? {} : { ca: settings.ca }),
  connectTimeoutMs: settings.connectTimeoutMs,
  timeoutMs: settings.timeoutMs,
});

export class Transport {
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  private readonly httpsAgents = new Map<string, https.Agent>();

  private agentFor (url: URL, rules: TransportRules): http.Agent {
    if (url.protocol === 'http:') return this.httpAgent;
    const key = rules.ca ?? '';
    let agent = this.httpsAgents.get(key);
    if (agent === undefined) {
      // Extra CAs are trusted besides the system roots, not instead of them.
      agent = new https.Agent({ keepAlive: true, maxSockets: 16, ...(rules.ca === undefined ? {} : { ca: [...rootCertificates, rules.ca] }) });
      this.httpsAgents.set(key, agent);
    }
    return agent;
  }

  send (exchange: Exchange, rules: TransportRules): Promise<Answer> {
    const { url } = exchange;
    const literal = url.hostname.replace(/^\[|\]$/g, '');
    if (!rules.anyAddress && isIP(literal) !== 0 && !isPublicAddress(literal)) {
      return Promise.reject(new TransportError('not-allowed', new AddressNotAllowed(url.hostname, literal).message));
    }
    return new Promise<Answer>((resolve, reject) => {
      let failure: TransportError | undefined;
      let settled = false;
      const settle = (outcome: { answer: Answer } | { error: TransportError }): void => {
        if (settled) return;
        settled = true;
        clearTimeout(total);
        if ('answer' in outcome) resolve(outcome.answer);
        else reject(outcome.error);
      };
      // Destroying the request ends the exchange wherever it is (connecting, waiting, reading the body).
      const fail = (error: TransportError): void => {
        failure ??= error;
        req.destroy(error);
        settle({ error });
      };
      const total = setTimeout(() => fail(new TransportError('timeout', `no complete answer within ${rules.timeoutMs} ms`)), rules.timeoutMs);
      const request = url.protocol === 'https:' ? https.request : http.request;
      const req = request(url, {
        method: exchange.method,
        headers: { ...exchange.headers, ...(exchange.body === undefined ? {} : { 'content-length': String(exchange.body.length) }) },
        agent: this.agentFor(url, rules),
        ...(rules.anyAddress ? {} : { lookup: publicOnlyLookup }),
      }, (res) => {
        const declared = Number(res.headers['content-length'] ?? '0');
        if (declared > exchange.maxBytes) {
          fail(new TransportError('too-large', `the answer declares ${declared} bytes, over the limit of ${exchange.maxBytes}`));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > exchange.maxBytes) fail(new TransportError('too-large', `the answer is over the limit of ${exchange.maxBytes} bytes`));
          else chunks.push(chunk);
        });
        res.on('end', () => settle({ answer: { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) } }));
        res.on('close', () => settle({ error: failure ?? new TransportError('unreachable', 'the connection closed before the answer was complete') }));
        res.on('error', () => undefined); // 'close' settles it
      });
      req.on('socket', (socket) => {
        if (!socket.connecting) return; // a kept-alive connection
        const connect = setTimeout(() => fail(new TransportError('timeout', `no connection within ${rules.connectTimeoutMs} ms`)), rules.connectTimeoutMs);
        socket.once(url.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(connect));
        socket.once('close', () => clearTimeout(connect));
      });
      req.on('error', (err) => settle({ error: failure ?? (err instanceof TransportError ? err : transportErrorOf(err)) }));
      req.end(exchange.body === undefined ? undefined : Buffer.from(exchange.body));
    });
  }

  close (): void {
    this.httpAgent.destroy();
    for (const agent of this.httpsAgents.values()) agent.destroy();
  }
}

function transportErrorOf (err: Error): TransportError {
  if (err instanceof AddressNotAllowed) return new TransportError('not-allowed', err.message, { cause: err });
  const code = (err as NodeJS.ErrnoException).code;
  return new TransportError('unreachable', `${code ?? 'connection error'}: ${err.message}`, { cause: err });
}
