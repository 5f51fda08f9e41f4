import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'cloudly-release-control-plane';

/**
 * The version of the package this CLI was installed from: the `version` of the nearest
 * package.json named cloudly-release-control-plane above this file (under dist/ in an
 * install or a checkout, under src/ in the tests). Undefined when there is none. The CLI and the server share it.
 */
export function packageVersion (from: string = dirname(fileURLToPath(import.meta.url))): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown, version?: unknown };
      if (pkg.name === PACKAGE_NAME && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // no (readable) package.json here: look further up
    }
    if (dirname(dir) === dir) return undefined;
  }
}
