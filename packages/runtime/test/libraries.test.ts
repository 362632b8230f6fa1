/**
 * Real libraries, run under the full sandbox (an IsolatedRuntime with its default layers, seccomp
 * included) with WEB_POLYFILLS, give the same results as in plain Node: d3, @turf/turf, echarts
 * (server-side SVG), vega + vega-lite (vega-interpreter under strictEval), dagre, pptxgenjs,
 * three's GLTFExporter, and the ones that need Web Crypto (uuid, nanoid, crypto-js), at the
 * versions the lockfile pins (devDependencies of this package).
 *
 * Each check is one function in fixtures/libraries/cases.ts, called in this process with the
 * package imported normally, and evaluated from its source in the sandbox with the library's
 * browser bundle (or ES modules) loaded there.
 */
import test, { type ExecutionContext } from 'ava';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { WEB_POLYFILLS } from '@strata/polyfills';
import { IsolatedRuntime, type IsolatedRuntimeOptions } from '../src/index.js';
import { d3Case, dagreCase, echartsCase, pptxCase, threeCase, turfCase, vegaCase } from './fixtures/libraries/cases.js';
import { installNodeFileReader, packageFile, packageVersion, unzip } from './fixtures/libraries/support.js';
import { checkNoLeaks } from './helpers/leaks.js';

checkNoLeaks(test);

const require = createRequire(import.meta.url);
/** A package imported normally, as plain Node code would; untyped (not every library ships types). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const importPackage = (specifier: string): Promise<any> => import(specifier);

/** The versions the lockfile pins: a bump shows up here, not as a puzzling diff. */
const PINNED: Record<string, string> = {
  d3: '7.9.2',
  '@turf/turf': '7.4.0',
  echarts: '6.1.0',
  vega: '6.4.0',
  'vega-lite': '6.5.0',
  'vega-interpreter': '2.3.2',
  dagre: '0.8.5',
  pptxgenjs: '4.0.1',
  three: '0.187.0',
  uuid: '14.0.3',
  nanoid: '6.0.2',
  'crypto-js': '4.2.0',
  jszip: '3.10.2',
  lodash: '4.18.1',
};

/** The guest's clock and Math.random are frozen, so a run is reproducible. */
const FROZEN = { clock: { at: '2026-01-01T00:00:00Z', seed: 7 } } as const;

// A worker process each; more at once than there are cores only slows every one of them.
let running = 0;
const waiting: (() => void)[] = [];
const MAX_RUNNING = Math.max(1, Math.min(2, availableParallelism()));

/**
 * Starts a sandboxed runtime with WEB_POLYFILLS and `scripts` as bootstrap, checks it really is
 * the full sandbox (seccomp enforced), and hands it to `use`.
 */
async function inSandbox<T>(
  t: ExecutionContext,
  scripts: readonly string[],
  use: (rt: IsolatedRuntime) => Promise<T>,
  options: IsolatedRuntimeOptions = {},
): Promise<T> {
  if (running >= MAX_RUNNING) await new Promise<void>((resolve) => waiting.push(resolve));
  running++;
  try {
    await using rt = await IsolatedRuntime.start({ bootstrap: [WEB_POLYFILLS, ...scripts], timeout: 20_000, ...FROZEN, ...options });
    t.true(
      rt.report.layers.some((l) => l.name === 'seccomp' && l.enforcement === 'full'),
      `the seccomp layer is enforced: ${JSON.stringify(rt.report.layers.map((l) => [l.name, l.enforcement]))}`,
    );
    return await use(rt);
  } finally {
    running--;
    waiting.shift()?.();
  }
}

/** `fn(...globals)` evaluated by the guest, from `fn`'s source. */
const call = (fn: (...args: never[]) => unknown, ...globals: string[]): string => `(${fn.toString()})(${globals.join(', ')})`;

test('the libraries are the versions the lockfile pins', (t) => {
  // This file runs as dist/test/libraries.test.js: the workspace root is four levels up.
  const lock = JSON.parse(readFileSync(new URL('../../../../package-lock.json', import.meta.url), 'utf8')) as {
    packages: Record<string, { version?: string; devDependencies?: Record<string, string> }>;
  };
  const names = Object.keys(PINNED);
  t.deepEqual(
    Object.fromEntries(names.map((name) => [name, lock.packages['packages/runtime']?.devDependencies?.[name]])),
    PINNED,
    'package.json pins them exactly',
  );
  t.deepEqual(Object.fromEntries(names.map((name) => [name, lock.packages[`node_modules/${name}`]?.version])), PINNED, 'the lockfile resolves them');
  t.deepEqual(Object.fromEntries(names.map((name) => [name, packageVersion(name)])), PINNED, 'they are what is installed');
});

test('d3: scales, shapes, formats, geo paths and array statistics', async (t) => {
  const expected = d3Case(await importPackage('d3'));
  const actual = await inSandbox(t, [packageFile('d3', 'dist/d3.min.js')], (rt) => rt.eval(call(d3Case, 'd3')));
  t.deepEqual(actual, expected);
});

test('@turf/turf: buffer, area, distance and friends on fixed inputs', async (t) => {
  const expected = turfCase(await import('@turf/turf'));
  const actual = await inSandbox(t, [packageFile('@turf/turf', 'turf.min.js')], (rt) => rt.eval(call(turfCase, 'turf')));
  t.deepEqual(actual, expected);
});

test('echarts: the server-side SVG of a bar chart is the same string', async (t) => {
  // Node's entry is dist/echarts.js, the unminified build of the bundle the sandbox loads.
  const expected = echartsCase(require('echarts')) as string;
  const actual = await inSandbox(t, [packageFile('echarts', 'dist/echarts.min.js')], (rt) => rt.eval(call(echartsCase, 'echarts')));
  t.true(expected.startsWith('<svg') && expected.includes('Sales') && expected.length > 2_000);
  t.is(actual, expected);
});

test('vega + vega-lite: the compiled spec, the data and view.toSVG() with vega-interpreter under strictEval', async (t) => {
  const expected = (await vegaCase(await import('vega'), await import('vega-lite'), await import('vega-interpreter'))) as { svg: string };
  const actual = await inSandbox(
    t,
    [packageFile('vega', 'build/vega.min.js'), packageFile('vega-lite', 'build/vega-lite.min.js')],
    async (rt) => {
      t.is(await rt.eval('try { new Function("return 1"); "compiled" } catch (e) { e.name }'), 'EvalError', 'strictEval is on');
      // vega-interpreter is an ES module importing three names from vega-util, which vega re-exports.
      rt.addModule('vega-util', 'export const { ascending, isString, DisallowedObjectProperties } = globalThis.vega;');
      rt.addModule('vega-interpreter', packageFile('vega-interpreter', 'build/vega-interpreter.js'));
      const { out } = await rt.evalModule(
        `import * as interpreter from 'vega-interpreter'; export const out = await ${call(vegaCase, 'vega', 'vegaLite', 'interpreter')};`,
      );
      return out;
    },
    { strictEval: true },
  );
  t.true(expected.svg.startsWith('<svg') && expected.svg.includes('<path'));
  t.deepEqual(actual, expected);
});

test('dagre: the layout of a small graph', async (t) => {
  // Node's entry is index.js (lodash and graphlib as packages); the sandbox loads the browser bundle.
  const expected = dagreCase(require('dagre'));
  const actual = await inSandbox(t, [packageFile('dagre', 'dist/dagre.min.js')], (rt) => rt.eval(call(dagreCase, 'dagre')));
  t.deepEqual(actual, expected);
});

test('pptxgenjs: a one-slide presentation has the same entries and the same XML', async (t) => {
  const { default: PptxGenJS } = await import('pptxgenjs');
  const expected = unzip(Buffer.from((await pptxCase(PptxGenJS)) as string, 'base64'));
  const actual = unzip(
    Buffer.from((await inSandbox(t, [packageFile('pptxgenjs', 'dist/pptxgen.bundle.js')], (rt) => rt.eval(call(pptxCase, 'PptxGenJS')))) as string, 'base64'),
  );
  // docProps/core.xml records when the file was made: the guest's frozen clock, this process's now.
  const stamp = /(<dcterms:(?:created|modified)[^>]*>)([^<]*)(<)/g;
  const core = actual.get('docProps/core.xml')?.toString('utf8') ?? '';
  t.deepEqual(
    [...core.matchAll(stamp)].map((m) => m[2]),
    ['2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z'],
  );
  const text = (entries: Map<string, Buffer>) => [...entries].map(([name, data]) => [name, data.toString('utf8').replace(stamp, '$1…$3')]);
  t.deepEqual(text(actual), text(expected));
  t.true(expected.has('ppt/slides/slide1.xml') && expected.get('ppt/slides/slide1.xml')!.includes('Hello from the sandbox'));
});

test('three: GLTFExporter writes the same glTF JSON and the same GLB', async (t) => {
  installNodeFileReader(); // plain Node has Blob but no FileReader, which GLTFExporter reads Blobs with
  const THREE = await importPackage('three');
  const { GLTFExporter } = await importPackage('three/examples/jsm/exporters/GLTFExporter.js');
  const expected = (await threeCase(THREE, GLTFExporter)) as { json: string; glb: Uint8Array };
  const actual = await inSandbox(t, [], async (rt) => {
    // three is ES modules only: three.module.js imports ./three.core.js; GLTFExporter imports 'three'.
    const files: Record<string, string> = {
      three: 'build/three.module.js',
      'three/build/three.core.js': 'build/three.core.js',
      'three/examples/jsm/exporters/GLTFExporter.js': 'examples/jsm/exporters/GLTFExporter.js',
    };
    for (const [specifier, path] of Object.entries(files)) rt.addModule(specifier, packageFile('three', path));
    rt.setModuleResolver((specifier, referrer) => (referrer === 'three' && specifier.startsWith('./') ? `three/build/${specifier.slice(2)}` : specifier));
    const { out } = await rt.evalModule(
      `import * as THREE from 'three'; import { GLTFExporter } from 'three/examples/jsm/exporters/GLTFExporter.js';
       export const out = await ${call(threeCase, 'THREE', 'GLTFExporter')};`,
    );
    return out as { json: string; glb: Uint8Array };
  });
  const json = JSON.parse(expected.json) as { meshes: unknown[]; nodes: unknown[]; buffers: { uri: string }[] };
  t.is(json.meshes.length, 2);
  t.regex(json.buffers[0]!.uri, /^data:application\/octet-stream;base64,/);
  t.is(new TextDecoder().decode(expected.glb.subarray(0, 4)), 'glTF');
  t.is(actual.json, expected.json);
  t.true(actual.glb instanceof Uint8Array);
  t.deepEqual(actual.glb, expected.glb);
});

/**
 * ES modules of an installed package for the guest: a resolver for its relative imports and a
 * loader reading its files, so the package's own browser build runs unchanged.
 */
function servePackage(rt: IsolatedRuntime, name: string, entry: string): void {
  const prefix = `${name}/`;
  rt.setModuleResolver((specifier, referrer) => {
    if (specifier === name) return prefix + entry;
    if (!specifier.startsWith('.') || !referrer.startsWith(prefix)) return undefined;
    return prefix + new URL(specifier, `file:///${referrer.slice(prefix.length)}`).pathname.slice(1);
  });
  rt.setModuleLoader((specifier) => (specifier.startsWith(prefix) ? packageFile(name, specifier.slice(prefix.length)) : undefined));
}

test('uuid (its ES modules, unchanged): v4 and v7 from crypto.getRandomValues, seeded by the frozen clock; v5 the same as in Node', async (t) => {
  const uuid = await importPackage('uuid');
  const run = (seedOptions: IsolatedRuntimeOptions) =>
    inSandbox(
      t,
      [],
      async (rt) => {
        servePackage(rt, 'uuid', 'dist/index.js');
        const { out } = await rt.evalModule(
          `import { v4, v5, v7, validate, version } from 'uuid'; const a = v4(); const b = v7(); export const out = [a, validate(a), version(a), version(b), v5('hello', v5.URL), crypto.randomUUID()];`,
        );
        return out as [string, boolean, number, number, string, string];
      },
      seedOptions,
    );
  const first = await run({});
  t.regex(first[0], /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.deepEqual(first.slice(1, 4), [true, 4, 7]);
  t.is(first[4], uuid.v5('hello', uuid.v5.URL), 'v5 (SHA-1, no randomness) is the same as in Node');
  t.deepEqual(await run({}), first, 'the frozen clock and seed make every random draw reproducible');
  t.not((await run({ clock: { at: '2026-01-01T00:00:00Z', seed: 8 } }))[0], first[0], 'another seed, another UUID');
});

test('nanoid (its browser ES module): ids from crypto.getRandomValues, of the default alphabet and size', async (t) => {
  const ids = await inSandbox(t, [], async (rt) => {
    servePackage(rt, 'nanoid', 'index.browser.js');
    const { out } = await rt.evalModule(
      `import { nanoid, customAlphabet } from 'nanoid'; export const out = [nanoid(), nanoid(), customAlphabet('abc', 8)()];`,
    );
    return out as [string, string, string];
  });
  t.regex(ids[0], /^[A-Za-z0-9_-]{21}$/);
  t.not(ids[0], ids[1]);
  t.regex(ids[2], /^[abc]{8}$/);
});

test('crypto-js: AES with a passphrase (a random salt from crypto.getRandomValues) encrypts in the sandbox, and Node decrypts it', async (t) => {
  const CryptoJS = require('crypto-js') as {
    AES: { decrypt(c: string, p: string): { toString(e: unknown): string } };
    enc: { Utf8: unknown };
    SHA256(s: string): { toString(): string };
  };
  const [ciphertext, hash, random] = await inSandbox(
    t,
    [packageFile('crypto-js', 'crypto-js.js')],
    async (rt) =>
      (await rt.eval(
        '[CryptoJS.AES.encrypt("attack at dawn", "passphrase").toString(), CryptoJS.SHA256("abc").toString(), CryptoJS.lib.WordArray.random(16).sigBytes]',
      )) as [string, string, number],
  );
  t.is(CryptoJS.AES.decrypt(ciphertext, 'passphrase').toString(CryptoJS.enc.Utf8), 'attack at dawn');
  t.is(hash, CryptoJS.SHA256('abc').toString());
  t.is(random, 16);
});

test("JSZip's own browser build (jszip.min.js): a zip made in the sandbox is the archive Node reads, and the sandbox reads it back", async (t) => {
  const [zip, back] = await inSandbox(
    t,
    [packageFile('jszip', 'dist/jszip.min.js')],
    async (rt) =>
      (await rt.eval(`(async () => {
      const zip = new JSZip();
      zip.file('hello.txt', 'Hello, world');
      zip.folder('data').file('n.json', JSON.stringify({ n: 42 }));
      const bytes = await zip.generateAsync({ type: 'uint8array', compression: 'DEFLATE' });
      const again = await JSZip.loadAsync(bytes);
      return [bytes, await again.file('data/n.json').async('string')];
    })()`)) as [Uint8Array, string],
  );
  const entries = unzip(zip);
  t.is(entries.get('hello.txt')?.toString('utf8'), 'Hello, world');
  t.is(entries.get('data/n.json')?.toString('utf8'), '{"n":42}');
  t.is(back, '{"n":42}');
});

test('lodash loaded by the guest under strictEval: it finds the global through self, with no Function("return this")', async (t) => {
  const out = await inSandbox(
    t,
    [],
    async (rt) =>
      rt.eval(
        `${packageFile('lodash', 'lodash.js')}\n;[_.chunk([1, 2, 3, 4, 5], 2), _.sortBy([3, 1, 2]), _.groupBy(['one', 'two', 'three'], 'length'), (() => { try { _.template('x'); return 'compiled'; } catch (e) { return e.name; } })()]`,
      ),
    { strictEval: true },
  );
  const lodash = require('lodash') as {
    chunk: (a: unknown[], n: number) => unknown;
    sortBy: (a: unknown[]) => unknown;
    groupBy: (a: unknown[], k: string) => unknown;
  };
  t.deepEqual(
    out,
    [lodash.chunk([1, 2, 3, 4, 5], 2), lodash.sortBy([3, 1, 2]), lodash.groupBy(['one', 'two', 'three'], 'length'), 'EvalError'],
    'only _.template, which compiles code, is refused',
  );
});
