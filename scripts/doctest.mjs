// npm run doctest: every fenced ts/js/sh block in the documentation runs as written, as a user who
// copied it into an application would, so an example cannot rot unnoticed.
//
// Which blocks: README.md, docs/**/*.md (not docs/api, the generated site) and packages/*/README.md.
// A block's fence info string is its language and then markers, each a word:
//
//   fragment   not a whole program (it uses names it does not define): type-checked, not run
//   network    needs the network or a credential: type-checked, not run
//   no-run     a command that must not run here (it would recurse into npm test, reinstall the
//              tree, or run for minutes): sh blocks are syntax-checked (`sh -n`), code type-checked
//   node22     runs on the Node 22 of hosts/node22 (npm test installs it); type-checked and
//              reported skipped where that Node is absent, unless STRATA_TEST_PLATFORM declares
//              node22-host (as CI does): then its absence fails the block
//   macos      runs on macOS only; type-checked everywhere
//
// An unknown marker is an error, so a typo never skips a block silently. Names a fragment uses may
// be declared in an HTML comment right above its fence (invisible on GitHub and in typedoc):
//   <!-- doctest-declare: declare const rt: import('@strata/runtime').IsolatedRuntime; -->
//
// Shown output: a ```text output block right after a runnable block (only blank lines between)
// is what that block prints to stdout. Compared after this normalisation: line endings to \n,
// trailing spaces cut, leading and trailing blank lines dropped; in the expected text `…` stands
// for any characters within one line (pids, timings). A block that exits non-zero, prints to
// stderr, or runs past BLOCK_TIMEOUT_MS fails, and the failure names the file, the fence's line
// and the output.
//
// TypeScript blocks are type-checked together (one tsc run over the built packages' .d.ts) and
// run with Node's own type stripping, from a scratch application inside the repository (so the
// workspace packages resolve as installed ones would), removed afterwards.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// The one reader of STRATA_TEST_PLATFORM (the runtime's test helpers), built before doctest runs.
import { isDeclared } from '../packages/runtime/dist/src/testing/platform.js';

export const BLOCK_TIMEOUT_MS = 60_000;
export const MARKERS = new Set(['fragment', 'network', 'no-run', 'node22', 'macos']);
const CODE_LANGS = new Map([
  ['ts', 'ts'],
  ['typescript', 'ts'],
  ['js', 'js'],
  ['javascript', 'js'],
  ['sh', 'sh'],
  ['bash', 'sh'],
  ['shell', 'sh'],
]);
// The comment right above the fence: one comment (no `-->` inside), so that an earlier block's
// declarations never run on into this one's.
const DECLARE_COMMENT = /<!--\s*doctest-declare:((?:(?!-->)[\s\S])*)-->\s*$/;

/**
 * The fenced blocks of one Markdown text: `{ file, line, lang, markers, code, declare, expected }`
 * for each ts/js/sh block (`line` is the fence's, 1-based; `expected` the following output block).
 */
export function extractBlocks(markdown, file) {
  const lines = markdown.split(/\r?\n/);
  const fences = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^( {0,3})(`{3,}|~{3,})(.*)$/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, info] = open;
    const body = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = new RegExp(`^ {0,3}${fence[0]}{${fence.length},}\\s*$`).exec(lines[j]);
      if (close) break;
      body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j].trimStart());
    }
    fences.push({ line: i + 1, end: j + 1, words: info.trim().split(/\s+/).filter(Boolean), body });
    i = j;
  }
  const blocks = [];
  for (let k = 0; k < fences.length; k++) {
    const { line, words, body } = fences[k];
    const lang = CODE_LANGS.get(words[0]);
    if (!lang) {
      if (words.includes('output') && !isOutputOf(fences, k, lines)) {
        throw new Error(`${file}:${line}: an output block must follow a ts/js/sh block`);
      }
      continue;
    }
    const markers = words.slice(1);
    for (const marker of markers) {
      if (!MARKERS.has(marker)) {
        throw new Error(`${file}:${line}: unknown doctest marker '${marker}' (known: ${[...MARKERS].join(', ')})`);
      }
    }
    const before = lines.slice(0, line - 1).join('\n');
    const declared = DECLARE_COMMENT.exec(before);
    const next = fences[k + 1];
    const expected = next && next.words[0] === 'text' && next.words.includes('output') && isOutputOf(fences, k + 1, lines) ? next.body.join('\n') : undefined;
    blocks.push({ file, line, lang, markers, code: body.join('\n') + '\n', declare: declared?.[1].trim(), expected });
  }
  return blocks;
}

function isOutputOf(fences, k, lines) {
  const previous = fences[k - 1];
  if (!previous || !CODE_LANGS.has(previous.words[0])) return false;
  return lines.slice(previous.end, fences[k].line - 1).every((l) => l.trim() === '');
}

/** Normalises output for comparison (see the module comment). */
export function normaliseOutput(text) {
  const lines = text
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((l) => l.trimEnd());
  while (lines.length && lines[0] === '') lines.shift();
  while (lines.length && lines.at(-1) === '') lines.pop();
  return lines.join('\n');
}

/** Whether `actual` output matches the shown `expected` (`…` matches anything within a line). */
export function outputMatches(expected, actual) {
  const want = normaliseOutput(expected).split('\n');
  const got = normaliseOutput(actual).split('\n');
  if (want.length !== got.length) return false;
  return want.every((line, i) => {
    const pattern = line
      .split('…')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*');
    return new RegExp(`^${pattern}$`).test(got[i]);
  });
}

/** The documentation files of a checkout, relative to `root`. */
export function documentationFiles(root) {
  const files = [];
  if (existsSync(path.join(root, 'README.md'))) files.push('README.md');
  const walk = (dir) => {
    for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory() && rel !== path.join('docs', 'api')) walk(rel);
      else if (entry.isFile() && entry.name.endsWith('.md')) files.push(rel);
    }
  };
  if (existsSync(path.join(root, 'docs'))) walk('docs');
  const packages = path.join(root, 'packages');
  if (existsSync(packages)) {
    for (const name of readdirSync(packages).sort()) {
      if (existsSync(path.join(packages, name, 'README.md'))) files.push(path.join('packages', name, 'README.md'));
    }
  }
  return files;
}

/** What happens to a block on this machine: 'run', 'run-node22', or a reason it only gets checked. */
function planFor(block, node22) {
  const has = (m) => block.markers.includes(m);
  if (has('fragment')) return 'checked (fragment)';
  if (has('network')) return 'checked (needs the network)';
  if (has('no-run')) return 'checked (no-run)';
  if (has('macos') && process.platform !== 'darwin') return 'checked (macOS only)';
  if (has('node22')) return node22 ? 'run-node22' : 'checked (hosts/node22 not installed: skipped)';
  return 'run';
}

function slug(block) {
  return `${block.file.replace(/[^A-Za-z0-9]+/g, '_')}_L${block.line}`;
}

const TSCONFIG = {
  compilerOptions: {
    target: 'esnext',
    lib: ['esnext'],
    module: 'nodenext',
    moduleResolution: 'nodenext',
    moduleDetection: 'force',
    types: ['node'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowImportingTsExtensions: true,
  },
};

function typeCheck(tsBlocks, scratch, root) {
  if (tsBlocks.length === 0) return [];
  writeFileSync(
    path.join(scratch, 'tsconfig.json'),
    JSON.stringify({ ...TSCONFIG, files: tsBlocks.flatMap((b) => (b.ambient ? [b.ambient, b.source] : [b.source])) }, null, 2),
  );
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], {
    cwd: scratch,
    encoding: 'utf8',
  });
  if (result.status === 0) return [];
  const failures = new Map();
  const unattributed = [];
  for (const line of `${result.stdout}${result.stderr}`.split('\n')) {
    const match = /^(.+?)\((\d+),(\d+)\): (.*)$/.exec(line);
    const block = match && tsBlocks.find((b) => b.source === match[1]);
    if (!block) {
      if (line.trim()) unattributed.push(line);
      continue;
    }
    const docLine = block.line + Number(match[2]) - block.prelude;
    const text = Number(match[2]) <= block.prelude ? `(in its doctest-declare) ${match[4]}` : `line ${docLine}: ${match[4]}`;
    failures.set(block, [...(failures.get(block) ?? []), text]);
  }
  if (failures.size === 0) return [{ block: undefined, message: `tsc failed:\n${unattributed.join('\n')}` }];
  return [...failures].map(([block, errors]) => ({ block, message: `does not type-check:\n${errors.join('\n')}` }));
}

function runProcess(command, args, options) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(command, args, { ...options, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, options.timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut, ms: Date.now() - started });
    });
  });
}

async function runBlock(block, how, { root, scratch, node22, timeoutMs }) {
  let result;
  if (block.lang === 'sh') {
    result = await runProcess('sh', ['-e', '-c', block.code], { cwd: root, timeoutMs, env: process.env });
  } else {
    const node = how === 'run-node22' ? node22 : process.execPath;
    result = await runProcess(node, [block.source], { cwd: scratch, timeoutMs, env: process.env });
  }
  const problems = [];
  if (result.timedOut) problems.push(`ran past ${timeoutMs} ms`);
  else if (result.code !== 0) problems.push(result.signal ? `killed by ${result.signal}` : `exit ${result.code}`);
  if (result.stderr.trim()) problems.push('wrote to stderr');
  if (block.expected !== undefined && !outputMatches(block.expected, result.stdout)) {
    problems.push(`output differs from the block shown:\n--- expected ---\n${normaliseOutput(block.expected)}`);
  }
  return { ...result, problems };
}

function checkSyntax(block, root) {
  if (block.lang === 'sh') {
    const r = spawnSync('sh', ['-n', '-c', block.code], { cwd: root, encoding: 'utf8' });
    return r.status === 0 ? undefined : `is not valid sh: ${r.stderr.trim()}`;
  }
  if (block.lang === 'js') {
    const r = spawnSync(process.execPath, ['--check', block.source], { encoding: 'utf8' });
    return r.status === 0 ? undefined : `is not valid JavaScript: ${r.stderr.trim()}`;
  }
  return undefined; // TypeScript is checked by tsc
}

async function inPool(items, width, work) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

/**
 * Runs the documentation's blocks. Returns `{ ok, failures, results }`; `log` receives one line per
 * block. The scratch folder is created inside `root` and always removed.
 */
export async function doctest({
  root,
  files = documentationFiles(root),
  scratchName = '.doctest',
  node22 = defaultNode22(root),
  timeoutMs = BLOCK_TIMEOUT_MS,
  concurrency = 2,
  platform = process.env.STRATA_TEST_PLATFORM ?? '',
  log = console.log,
} = {}) {
  const node22Declared = isDeclared('node22-host', { STRATA_TEST_PLATFORM: platform });
  const scratch = path.join(root, scratchName);
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  const failures = [];
  const results = [];
  const fail = (block, message, output = '') => {
    failures.push({ block, message });
    const where = block ? `${block.file}:${block.line} (${block.lang}${block.markers.map((m) => ' ' + m).join('')})` : 'doctest';
    log(`FAIL ${where} ${message}${output ? `\n--- output ---\n${output.trimEnd()}` : ''}`);
  };
  try {
    writeFileSync(path.join(scratch, 'package.json'), JSON.stringify({ private: true, type: 'module' }) + '\n');
    const blocks = [];
    for (const file of files) {
      try {
        blocks.push(...extractBlocks(readFileSync(path.join(root, file), 'utf8'), file));
      } catch (error) {
        fail(undefined, error.message);
      }
    }
    for (const block of blocks) {
      if (block.lang === 'sh') continue;
      // `declare module` must be ambient (outside a module file), so it gets a .d.ts of its own.
      const ambient = block.lang === 'ts' && block.declare?.startsWith('declare module');
      if (ambient) writeFileSync(path.join(scratch, `${slug(block)}.d.ts`), `${block.declare}\n`);
      block.ambient = ambient ? `${slug(block)}.d.ts` : undefined;
      const prelude = block.lang === 'ts' && block.declare && !ambient ? `${block.declare}\n` : '';
      block.prelude = prelude ? prelude.split('\n').length - 1 : 0;
      block.source = `${slug(block)}.${block.lang === 'ts' ? 'ts' : 'mjs'}`;
      writeFileSync(path.join(scratch, block.source), prelude + block.code);
      block.source = path.join(scratch, block.source);
    }
    const tsBlocks = blocks.filter((b) => b.lang === 'ts');
    for (const b of tsBlocks) b.source = path.relative(scratch, b.source);
    const typeErrors = typeCheck(tsBlocks, scratch, root);
    for (const b of tsBlocks) b.source = path.join(scratch, b.source);
    const badTypes = new Set();
    for (const { block, message } of typeErrors) {
      if (block) badTypes.add(block);
      fail(block, message);
    }
    const toRun = [];
    for (const block of blocks) {
      if (badTypes.has(block)) continue;
      const syntax = checkSyntax(block, root);
      if (syntax) {
        fail(block, syntax);
        continue;
      }
      const how = planFor(block, node22);
      if (how.startsWith('run')) toRun.push({ block, how });
      else if (block.markers.includes('node22') && !node22 && node22Declared) {
        fail(block, 'STRATA_TEST_PLATFORM declares node22-host, but hosts/node22 is not installed (npm ci --prefix hosts/node22)');
      } else {
        results.push({ block, how });
        log(`ok   ${block.file}:${block.line} ${block.lang}: ${how}`);
      }
    }
    await inPool(toRun, concurrency, async ({ block, how }) => {
      const run = await runBlock(block, how, { root, scratch, node22, timeoutMs });
      results.push({ block, how, ms: run.ms });
      const output = `${run.stdout}${run.stderr ? `--- stderr ---\n${run.stderr}` : ''}`;
      if (run.problems.length) fail(block, run.problems.join('; '), output);
      else log(`ok   ${block.file}:${block.line} ${block.lang}: ran${how === 'run-node22' ? ' on Node 22' : ''} (${run.ms} ms)`);
    });
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return { ok: failures.length === 0, failures, results };
}

function defaultNode22(root) {
  const node = path.join(root, 'hosts', 'node22', 'node_modules', '.bin', 'node');
  return existsSync(node) ? node : undefined;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const only = process.argv.slice(2);
  const started = Date.now();
  const { ok, failures, results } = await doctest({ root, files: only.length ? only : undefined });
  const ran = results.filter((r) => r.how.startsWith('run')).length;
  console.log(
    `doctest: ${results.length + failures.length} blocks, ${ran} ran, ${results.length - ran} checked only, ` +
      `${failures.length} failed (${((Date.now() - started) / 1000).toFixed(1)} s)`,
  );
  process.exit(ok ? 0 : 1);
}
