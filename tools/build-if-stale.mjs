// `npm start` builds only when the build is not current (issue 23: a restart rebuilt the TypeScript every
// time, 38–54 s): the build is current when dist/.build-stamp is newer than every file the build reads —
// src/, tools/dev-database/, the tsconfig files and package.json. Otherwise `npm run build`, then the stamp.
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const stamp = 'dist/.build-stamp';
const inputs = ['src', 'tools/dev-database', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];

/** The newest modification time of a file or of any file under a directory. */
function newest (path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((max, name) => Math.max(max, newest(join(path, name))), stat.mtimeMs);
}

const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0;
const changed = Math.max(...inputs.filter((p) => existsSync(p)).map(newest));
if (built > changed && existsSync('dist/src/server.js')) {
  console.log('the build is current (dist/ is newer than src/): not rebuilt');
} else {
  execSync('npm run build', { stdio: 'inherit' });
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
}
