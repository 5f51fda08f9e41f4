import { execFileSync, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { cliEntry } from './harness.js';

const commands = [
  'list', 'status', 'history', 'services', 'get', 'describe', 'promote', 'rollback', 'abort', 'wait',
  'requests', 'approve', 'break-glass', 'governance', 'pipeline', 'attestation', 'version', 'completion',
];

/**
 * `cloudly-release completion bash|zsh`, as a user installs it: the built CLI prints the script,
 * bash parses it, sources it, and its function completes real command lines.
 */

const script = (shell: string): string =>
  execFileSync(process.execPath, [cliEntry, 'completion', shell], { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '' } });

/** `source <(cloudly-release completion bash)` in a bash program. */
const sourceIt = `source <(${JSON.stringify(process.execPath)} ${JSON.stringify(cliEntry)} completion bash)`;

/** What the completion function offers for `words` (the last one is being completed). */
function complete (words: string[]): string[] {
  const program = `${sourceIt}
COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})
COMP_CWORD=${words.length - 1}
_cloudly_release
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const res = spawnSync('bash', ['-c', program], { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`bash failed (${res.status}): ${res.stderr}`);
  return res.stdout.split('\n').filter((w) => w !== '');
}

describe('cloudly-release completion', () => {
  it('bash accepts the script (bash -n) and registers it for cloudly-release (complete -p)', () => {
    const bash = script('bash');
    const syntax = spawnSync('bash', ['-n'], { input: bash, encoding: 'utf8' });
    expect(syntax.status, syntax.stderr).toBe(0);
    const registered = spawnSync('bash', ['-c', `${sourceIt} && complete -p cloudly-release`], { encoding: 'utf8' });
    expect(registered.status, registered.stderr).toBe(0);
    expect(registered.stdout.trim()).toBe('complete -F _cloudly_release cloudly-release');
  });

  it('completes commands, the options of the command being typed, and fixed values', () => {
    expect(complete(['cloudly-release', ''])).toEqual([...commands, 'help', '--help', '--version']);
    expect(complete(['cloudly-release', 'pro'])).toEqual(['promote']);
    expect(complete(['cloudly-release', 'promote', '--ex'])).toEqual(['--expect-generation', '--expect-rollout-id']);
    expect(complete(['cloudly-release', 'abort', '--re'])).toEqual(['--retries', '--request-timeout', '--reason']);
    expect(complete(['cloudly-release', 'status', '--wa'])).toEqual(['--watch']);
    expect(complete(['cloudly-release', 'list', '-o', ''])).toEqual(['table', 'wide', 'name', 'json', 'yaml']);
    expect(complete(['cloudly-release', 'get', ''])).toEqual(expect.arrayContaining(['services', 'releases', 'rollouts', '--service', '--name']));
    expect(complete(['cloudly-release', 'describe', 'se'])).toEqual(['service']);
    expect(complete(['cloudly-release', 'completion', ''])).toEqual(['bash', 'zsh']);
    expect(complete(['cloudly-release', 'attestation', 've'])).toEqual(['verify']);
    expect(complete(['cloudly-release', 'attestation', 'verify', '--ke'])).toEqual(['--key']);
    expect(complete(['cloudly-release', 'attestation', 'verify', '--c'])).toEqual(['--chain']);
    // The value of an option is not the command: `--url X status --wa` still completes status's options.
    expect(complete(['cloudly-release', '--url', 'https://x', 'status', '--wa'])).toEqual(['--watch']);
    expect(complete(['cloudly-release', 'promote', '--service', ''])).toEqual([]);
    // Governance: subcommands, stop-the-line's on|off, each command's own options.
    expect(complete(['cloudly-release', 'break-glass', '']))
      .toEqual(expect.arrayContaining(['request', 'approve', 'show', '--grant', '--release', '--reason']));
    expect(complete(['cloudly-release', 'governance', 'st'])).toEqual(['stop-the-line']);
    expect(complete(['cloudly-release', 'governance', 'stop-the-line', ''])).toEqual(['on', 'off']);
    expect(complete(['cloudly-release', 'approve', '--req'])).toEqual(['--request-timeout', '--request']);
    expect(complete(['cloudly-release', 'promote', '--br'])).toEqual(['--break-glass-grant']);
    expect(complete(['cloudly-release', 'pipeline', '--d'])).toEqual(['--digest']);
  });

  it('zsh: a #compdef script naming every command (zsh itself is not needed to print it)', () => {
    const zsh = script('zsh');
    expect(zsh.startsWith('#compdef cloudly-release\n')).toBe(true);
    for (const command of commands) expect(zsh).toContain(`    ${command})`);
    expect(zsh).toContain("'(--output -o)'{--output,-o}'[table (default), wide, name, json or yaml]:format:(table wide name json yaml)'");
    expect(zsh).toContain('compdef _cloudly_release cloudly-release');
    expect(zsh).toContain("      '1:subcommand:(verify)' \\\n");
    expect(zsh).toContain("      '1:subcommand:(request approve show)' \\\n");
  });
});
