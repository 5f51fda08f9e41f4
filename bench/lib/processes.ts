import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

/** dist/ (this file runs from dist/bench/lib/). */
export const distDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const projectDir = path.resolve(distDir, '..');

/** A CPU-time reading (ms, user + system) of one process. */
export interface CpuProbe {
  name: string;
  read(): number;
}

const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time of another process from /proc (Linux); NaN elsewhere or once it is gone. */
export function procCpuProbe (name: string, pid: number | undefined): CpuProbe {
  return {
    name,
    read: () => {
      if (pid === undefined) return Number.NaN;
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
      } catch {
        return Number.NaN;
      }
    },
  };
}

/** CPU time of this process (the load generator, or the bare-driver floor). */
export const selfCpuProbe = (name: string): CpuProbe => ({
  name,
  read: () => {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1000;
  },
});

/** The local development database's JVM: the `java` child of this process running mongodev.MongoDevServer. */
export function findLocalMongoPid (): number | undefined {
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
        if (!cmdline.includes('mongodev.MongoDevServer')) continue;
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (ppid === process.pid) return Number(entry);
      } catch {
        // the process went away while we looked
      }
    }
  } catch {
    // no /proc
  }
  return undefined;
}

export function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface Child {
  name: string;
  url: string;
  pid: number | undefined;
  cpu: CpuProbe;
  /** SIGTERM and wait (a --cpu-prof profile is written on this clean exit). */
  stop(): Promise<number | null>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => { for (const child of live) child.kill('SIGKILL'); });

/**
 * Starts `node [nodeArgs] entry` on a free loopback port and waits until `readyPath`
 * answers 200. Output is kept (last lines) for error messages; it is not printed.
 */
export async function startNode (opts: {
  name: string, entry: string, env: Record<string, string>, nodeArgs?: string[], readyPath: string, log: (line: string) => void,
}): Promise<Child> {
  const port = await freePort();
  const tail: string[] = [];
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), opts.entry], {
    env: { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...opts.env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const keep = (chunk: Buffer): void => {
    if (process.env['BENCH_CHILD_OUTPUT']) process.stderr.write(`[${opts.name}] ${chunk.toString('utf8')}`);
    tail.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
    if (tail.length > 50) tail.splice(0, tail.length - 50);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => { live.delete(child); resolve(code); }));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${opts.name} exited (${child.exitCode}) before it was ready:\n${tail.join('\n')}`);
    try {
      const res = await fetch(`${url}${opts.readyPath}`, { signal: AbortSignal.timeout(2_000) });
      await res.text();
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${opts.name} was not ready within 60 s:\n${tail.join('\n')}`);
    }
    await sleep(100);
  }
  opts.log(`${opts.name} ready at ${url} (pid ${child.pid ?? '?'})`);
  return {
    name: opts.name,
    url,
    pid: child.pid,
    cpu: procCpuProbe(opts.name, child.pid),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** CPU time (ms) the whole machine spent busy (all CPUs, from /proc/stat); NaN where there is none. */
export function machineBusyMs (): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const [, user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).map(Number);
    return (((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}
