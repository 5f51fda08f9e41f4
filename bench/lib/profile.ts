import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

/** The parts of a V8 .cpuprofile this summary reads. */
interface CpuProfile {
  nodes: Array<{ id: number, callFrame: { functionName: string, url: string, lineNumber: number }, hitCount?: number, children?: number[] }>;
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface ProfileEntry {
  function: string;
  location: string;
  selfMs: number;
  selfPercent: number;
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  /** Self time by function (top `limit`). */
  top: ProfileEntry[];
  /** Self time by package / area: node_modules/<pkg>, src/<dir>, node: internals, (gc), (idle). */
  byArea: ProfileEntry[];
}

const areaOf = (url: string, functionName: string): string => {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm?.[1]) return nm[1];
  const src = /dist\/src\/([^/]+)/.exec(url);
  if (src?.[1]) return `src/${src[1].replace(/\.js$/, '')}`;
  if (url.startsWith('node:')) return 'node: internals';
  return url;
};

/** Self time per function and per area of one .cpuprofile (sample counts × the mean sampling interval). */
export function summarizeProfile (file: string, limit = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const totalMs = (profile.endTime - profile.startTime) / 1000;
  const counts = new Map<number, number>();
  if (profile.samples) {
    for (const id of profile.samples) counts.set(id, (counts.get(id) ?? 0) + 1);
  } else {
    for (const node of profile.nodes) counts.set(node.id, node.hitCount ?? 0);
  }
  const totalSamples = [...counts.values()].reduce((a, b) => a + b, 0);
  const msPerSample = totalSamples > 0 ? totalMs / totalSamples : 0;
  const byFunction = new Map<string, ProfileEntry>();
  const byArea = new Map<string, ProfileEntry>();
  for (const node of profile.nodes) {
    const samples = counts.get(node.id) ?? 0;
    if (samples === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    const location = url === '' ? '' : `${url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/')}:${lineNumber + 1}`;
    const key = `${name}@${location}`;
    const entry = byFunction.get(key) ?? { function: name, location, selfMs: 0, selfPercent: 0 };
    entry.selfMs += samples * msPerSample;
    byFunction.set(key, entry);
    const area = areaOf(url, name);
    const a = byArea.get(area) ?? { function: area, location: '', selfMs: 0, selfPercent: 0 };
    a.selfMs += samples * msPerSample;
    byArea.set(area, a);
  }
  const finish = (entries: Iterable<ProfileEntry>, n: number): ProfileEntry[] => [...entries]
    .map((e) => ({ ...e, selfPercent: totalMs > 0 ? (100 * e.selfMs) / totalMs : 0 }))
    .sort((a, b) => b.selfMs - a.selfMs)
    .slice(0, n);
  return { file, totalMs, top: finish(byFunction.values(), limit), byArea: finish(byArea.values(), 20) };
}

export const profilesIn = (dir: string): string[] =>
  readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => path.join(dir, f));

export function formatProfile (summary: ProfileSummary, busyMs?: number): string {
  const lines = [
    `CPU profile ${path.basename(summary.file)}: ${(summary.totalMs / 1000).toFixed(1)} s recorded` +
      (busyMs === undefined ? '' : `, ${(busyMs / 1000).toFixed(1)} s not idle`),
    '',
    '| self ms | % | function | location |',
    '| ---: | ---: | --- | --- |',
    ...summary.top.map((e) => `| ${e.selfMs.toFixed(0)} | ${e.selfPercent.toFixed(1)} | \`${e.function}\` | ${e.location} |`),
    '',
    '| self ms | % | area |',
    '| ---: | ---: | --- |',
    ...summary.byArea.map((e) => `| ${e.selfMs.toFixed(0)} | ${e.selfPercent.toFixed(1)} | ${e.function} |`),
  ];
  return lines.join('\n');
}
