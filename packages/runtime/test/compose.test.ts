// composeLayers, table-tested: which layers a runtime gets (this platform's defaults with `layers`
// merged in by name) and whether `sandbox: 'require'` can be met with them. Pure: no platform,
// no worker; the end-to-end checks are in layers.test.ts.
import test from 'ava';
import type { LayerDescriptor, LayerRequirement, SandboxMode } from '../src/index.js';
import { PLATFORM_LAYERS } from '../src/layers/index.js';
import { composeLayers, type CompositionInput, type DefaultLayerFact, type NamedDescriptor } from '../src/layers/compose.js';

const LINUX = PLATFORM_LAYERS.linux!.map((d) => ({ ...d, installed: true }));
const DARWIN = PLATFORM_LAYERS.darwin!.map((d) => ({ ...d, installed: true }));
const withoutPackage = (name: string): DefaultLayerFact[] => LINUX.map((d) => (d.name === name ? { ...d, installed: false } : d));

/**
 * A given layer in short: `'landlock'` is the default's module as `landlock()` names it;
 * `'landlock*'` the same layer configured (options `{ configured: true }`); `'landlock@file'` a
 * layer named landlock from another module; `'landlock:off'` with its own requirement; any other
 * name (`'clock'`, `'x'`) a layer of its own.
 */
function given(short: string): NamedDescriptor {
  const [spec, requirement] = short.split(':') as [string, LayerRequirement | undefined];
  const name = spec.replace(/[*]|@file$/, '');
  const known = [...LINUX, ...DARWIN].find((d) => d.name === name);
  const module = spec.endsWith('@file') ? `file:///elsewhere/${name}.js` : (known?.module ?? `my-${name}/layer`);
  const descriptor: LayerDescriptor = {
    module,
    ...(spec.endsWith('*') ? { options: { configured: true } } : {}),
    ...(requirement === undefined ? {} : { requirement }),
  };
  return { name, descriptor };
}

/** The composed list in the same short form. */
function short(layers: readonly LayerDescriptor[]): string[] {
  return layers.map((d) => {
    const name = d.module.startsWith('file:')
      ? /([a-z-]+)\.js$/.exec(d.module)![1]! + '@file'
      : ([...LINUX, ...DARWIN].find((k) => k.module === d.module)?.name ?? /^my-(.+)\/layer$/.exec(d.module)![1]!);
    return `${name}${d.options?.['configured'] === true ? '*' : ''}${d.requirement === undefined ? '' : `:${d.requirement}`}`;
  });
}

interface Row {
  readonly label: string;
  readonly sandbox: SandboxMode;
  readonly layers: string[];
  readonly replace?: boolean;
  readonly omitDefaultLayers?: string[];
  readonly defaults?: DefaultLayerFact[] | undefined;
  readonly platform?: string;
  /** The composed list when the start goes ahead; `'refuse'` (SandboxUnavailable) or `'invalid'` (LayerConfigError) otherwise. */
  readonly expect: string[] | 'refuse' | 'invalid';
  /** Default layers named as missing (refused under require, warned about under auto). */
  readonly missing?: string[];
  /** Words the refusal or the one warning must contain; `[]`: no warning at all. */
  readonly says?: RegExp[];
}

const table: Row[] = [
  // layers add to the defaults
  { label: 'no layers: the defaults', sandbox: 'require', layers: [], expect: ['emptyroot', 'landlock', 'seccomp'], says: [] },
  {
    label: 'a layer of its own comes after the defaults',
    sandbox: 'require',
    layers: ['clock'],
    expect: ['emptyroot', 'landlock', 'seccomp', 'clock'],
    says: [],
  },
  {
    label: 'two of its own keep the user order',
    sandbox: 'auto',
    layers: ['x', 'clock'],
    expect: ['emptyroot', 'landlock', 'seccomp', 'x', 'clock'],
    says: [],
  },
  { label: 'emptyroot() alone: the defaults, not doubled', sandbox: 'require', layers: ['emptyroot'], expect: ['emptyroot', 'landlock', 'seccomp'], says: [] },
  // a layer named like a default takes its place
  {
    label: 'a configured landlock takes the default one’s place',
    sandbox: 'require',
    layers: ['landlock*'],
    expect: ['emptyroot', 'landlock*', 'seccomp'],
    says: [],
  },
  {
    label: 'a configured emptyroot takes the first place',
    sandbox: 'require',
    layers: ['emptyroot*'],
    expect: ['emptyroot*', 'landlock', 'seccomp'],
    says: [],
  },
  {
    label: 'a layer named landlock from another module replaces it by name',
    sandbox: 'require',
    layers: ['landlock@file'],
    expect: ['emptyroot', 'landlock@file', 'seccomp'],
    says: [],
  },
  {
    label: 'a default named, then one of its own: the defaults first, in place',
    sandbox: 'require',
    layers: ['landlock*', 'x'],
    expect: ['emptyroot', 'landlock*', 'seccomp', 'x'],
  },
  {
    label: 'configured landlock and emptyroot named in the other order: the platform order stays (the empty root must launch first)',
    sandbox: 'require',
    layers: ['landlock*', 'emptyroot*'],
    expect: ['emptyroot*', 'landlock*', 'seccomp'],
  },
  {
    label: 'defaults named out of order: the platform order stays',
    sandbox: 'require',
    layers: ['seccomp', 'landlock'],
    expect: ['emptyroot', 'landlock', 'seccomp'],
  },
  {
    label: 'own layers around named defaults: the defaults in place, then the others in the user order',
    sandbox: 'require',
    layers: ['x', 'seccomp*', 'y', 'landlock'],
    expect: ['emptyroot', 'landlock', 'seccomp*', 'x', 'y'],
  },
  {
    label: 'the defaults as they come (the old ...defaultLayers() spread) with one more: the same list',
    sandbox: 'require',
    layers: ['emptyroot', 'landlock', 'seccomp', 'x'],
    expect: ['emptyroot', 'landlock', 'seccomp', 'x'],
  },
  {
    label: 'a layer placed between defaults needs replaceDefaultLayers to stay there',
    sandbox: 'require',
    layers: ['emptyroot', 'landlock', 'x', 'seccomp'],
    expect: ['emptyroot', 'landlock', 'seccomp', 'x'],
  },
  {
    label: 'the same layer twice is left for the plan to refuse (LayerConfigError), not merged away',
    sandbox: 'require',
    layers: ['landlock', 'landlock*'],
    expect: ['emptyroot', 'landlock', 'seccomp', 'landlock*'],
  },
  // replaceDefaultLayers: the list is the whole list
  {
    label: 'replace, require, clock alone: refused naming every default and what to do',
    sandbox: 'require',
    replace: true,
    layers: ['clock'],
    expect: 'refuse',
    missing: ['emptyroot', 'landlock', 'seccomp'],
    says: [
      /landlock is not in layers, which replaceDefaultLayers: true makes the whole list \(add landlock\(\) from @strata\/layer-landlock\)/,
      /seccomp is not in layers/,
      /emptyroot is not in layers/,
      /by name .*emptyroot \(omitDefaultLayers: \['emptyroot'\]\)/,
      /sandbox: 'auto' to start without them/,
    ],
  },
  {
    label: 'replace, auto, clock alone: starts, one warning naming every default',
    sandbox: 'auto',
    replace: true,
    layers: ['clock'],
    expect: ['clock'],
    missing: ['emptyroot', 'landlock', 'seccomp'],
    says: [/without the default layers emptyroot, landlock, seccomp/],
  },
  {
    label: 'replace, off: nothing required, nothing warned',
    sandbox: 'off',
    replace: true,
    layers: ['clock'],
    expect: ['clock'],
    missing: ['emptyroot', 'landlock', 'seccomp'],
    says: [],
  },
  {
    label: 'replace, require, all three and one between: exactly as given',
    sandbox: 'require',
    replace: true,
    layers: ['emptyroot', 'landlock', 'x', 'seccomp'],
    expect: ['emptyroot', 'landlock', 'x', 'seccomp'],
    says: [],
  },
  {
    label: 'replace, require, nothing: refused',
    sandbox: 'require',
    replace: true,
    layers: [],
    expect: 'refuse',
    missing: ['emptyroot', 'landlock', 'seccomp'],
  },
  {
    label: 'replace, require, landlock+seccomp without the opt-out: refused naming emptyroot alone',
    sandbox: 'require',
    replace: true,
    layers: ['landlock', 'seccomp'],
    expect: 'refuse',
    missing: ['emptyroot'],
    says: [/emptyroot is not in layers/, /omitDefaultLayers: \['emptyroot'\]/, /without it \(with a warning naming it\)/],
  },
  // the named opt-out
  {
    label: "omitDefaultLayers: ['emptyroot'], require: the defaults without it",
    sandbox: 'require',
    omitDefaultLayers: ['emptyroot'],
    layers: [],
    expect: ['landlock', 'seccomp'],
    says: [],
  },
  {
    label: "omitDefaultLayers: ['emptyroot'] wins over an emptyroot in layers",
    sandbox: 'require',
    omitDefaultLayers: ['emptyroot'],
    layers: ['emptyroot', 'clock'],
    expect: ['landlock', 'seccomp', 'clock'],
    says: [],
  },
  {
    label: "omitDefaultLayers: ['emptyroot'] with replace and seccomp+landlock: starts, in the user order",
    sandbox: 'require',
    omitDefaultLayers: ['emptyroot'],
    replace: true,
    layers: ['seccomp', 'landlock'],
    expect: ['seccomp', 'landlock'],
    says: [],
  },
  {
    label: "omitDefaultLayers: ['emptyroot'] does not excuse seccomp",
    sandbox: 'require',
    omitDefaultLayers: ['emptyroot'],
    replace: true,
    layers: ['landlock'],
    expect: 'refuse',
    missing: ['seccomp'],
    says: [/seccomp is not in layers/],
  },
  {
    label: "omitDefaultLayers: ['emptyroot'], auto: no warning about it",
    sandbox: 'auto',
    omitDefaultLayers: ['emptyroot'],
    layers: [],
    expect: ['landlock', 'seccomp'],
    says: [],
  },
  {
    label: "omitDefaultLayers: ['seccomp'], require: refused, it is part of the OS sandbox",
    sandbox: 'require',
    omitDefaultLayers: ['seccomp'],
    layers: [],
    expect: 'refuse',
    missing: [],
    says: [/seccomp is left out by omitDefaultLayers, and it is part of the OS sandbox/, /sandbox: 'auto' to start without it/],
  },
  {
    label: "omitDefaultLayers: ['landlock'], auto: left out as asked, without a warning",
    sandbox: 'auto',
    omitDefaultLayers: ['landlock'],
    layers: ['landlock'],
    expect: ['emptyroot', 'seccomp'],
    says: [],
  },
  {
    label: "omitDefaultLayers: ['seatbelt'] on Linux: another platform's layer, nothing changes",
    sandbox: 'require',
    omitDefaultLayers: ['seatbelt'],
    layers: [],
    expect: ['emptyroot', 'landlock', 'seccomp'],
    says: [],
  },
  // per-layer requirements
  {
    label: "the OS sandbox turned off by a layer's own requirement: refused under require",
    sandbox: 'require',
    layers: ['landlock:off'],
    expect: 'refuse',
    missing: [],
    says: [/landlock has requirement: 'off', and it is part of the OS sandbox/],
  },
  {
    label: 'emptyroot turned off by its own requirement is a named opt-out',
    sandbox: 'require',
    layers: ['emptyroot:off'],
    expect: ['emptyroot:off', 'landlock', 'seccomp'],
    says: [],
  },
  {
    label: "landlock at 'auto' under require: refused ('auto' could let it go on a platform without it)",
    sandbox: 'require',
    layers: ['landlock:auto'],
    expect: 'refuse',
    missing: [],
    says: [/landlock has requirement: 'auto', and it is part of the OS sandbox/],
  },
  {
    label: 'seccomp explicitly off under auto: starts, and warns that the OS sandbox is turned down',
    sandbox: 'auto',
    layers: ['seccomp:off'],
    expect: ['emptyroot', 'landlock', 'seccomp:off'],
    says: [/the OS sandbox is turned down: seccomp has requirement: 'off'/],
  },
  // a missing package
  {
    label: 'landlock not installed, require: a broken install, naming the package',
    sandbox: 'require',
    defaults: withoutPackage('landlock'),
    layers: [],
    expect: 'invalid',
    says: [/its package is not installed: install @strata\/layer-landlock/],
  },
  {
    label: 'landlock not installed, auto: a broken install too, never a silent downgrade',
    sandbox: 'auto',
    defaults: withoutPackage('landlock'),
    layers: ['clock'],
    expect: 'invalid',
    says: [/its package is not installed: install @strata\/layer-landlock/],
  },
  {
    label: 'emptyroot not installed but left out by name: starts',
    sandbox: 'require',
    defaults: withoutPackage('emptyroot'),
    omitDefaultLayers: ['emptyroot'],
    layers: [],
    expect: ['landlock', 'seccomp'],
    says: [],
  },
  {
    label: 'emptyroot not installed, auto: names the package and the opt-out',
    sandbox: 'auto',
    defaults: withoutPackage('emptyroot'),
    layers: [],
    expect: 'invalid',
    says: [/install @strata\/layer-emptyroot.*or leave it out by name \(omitDefaultLayers: \['emptyroot'\]\)/],
  },
  {
    label: 'landlock not installed, but a layer named landlock given: nothing missing',
    sandbox: 'require',
    defaults: withoutPackage('landlock'),
    layers: ['landlock@file'],
    expect: ['emptyroot', 'landlock@file', 'seccomp'],
    says: [],
  },
  {
    label: 'landlock not installed, off: nothing required',
    sandbox: 'off',
    defaults: withoutPackage('landlock'),
    layers: [],
    expect: ['emptyroot', 'seccomp'],
    missing: ['landlock'],
    says: [],
  },
  // other platforms
  { label: 'macOS: seatbelt by default', sandbox: 'require', platform: 'darwin', defaults: DARWIN, layers: ['clock'], expect: ['seatbelt', 'clock'], says: [] },
  {
    label: 'macOS, replace without seatbelt: refused naming seatbelt',
    sandbox: 'require',
    platform: 'darwin',
    defaults: DARWIN,
    replace: true,
    layers: ['clock'],
    expect: 'refuse',
    missing: ['seatbelt'],
    says: [/seatbelt is not in layers/],
  },
  {
    label: 'a platform without an OS sandbox, require: refused whatever the layers',
    sandbox: 'require',
    platform: 'freebsd',
    defaults: undefined,
    layers: ['x'],
    expect: 'refuse',
    missing: [],
    says: [/Strata has no OS sandbox layer for freebsd/],
  },
  {
    label: 'a platform without an OS sandbox, auto: starts with the layers given, and warns',
    sandbox: 'auto',
    platform: 'freebsd',
    defaults: undefined,
    layers: ['x'],
    expect: ['x'],
    missing: [],
    says: [/runs without an OS sandbox: Strata has no OS sandbox layer for freebsd/],
  },
];

for (const row of table) {
  test(`compose: ${row.label}`, (t) => {
    const input: CompositionInput = {
      platform: row.platform ?? 'linux',
      defaults: 'defaults' in row ? row.defaults : LINUX,
      given: row.layers.map(given),
      replaceDefaultLayers: row.replace ?? false,
      omitDefaultLayers: row.omitDefaultLayers ?? [],
      sandbox: row.sandbox,
    };
    const composed = composeLayers(input);
    if (row.expect === 'invalid') {
      t.is(composed.decision, 'invalid');
      if (composed.decision !== 'invalid') return;
      for (const words of row.says ?? []) t.regex(composed.reason, words);
      return;
    }
    if (row.expect === 'refuse') {
      t.is(composed.decision, 'refuse');
      if (composed.decision !== 'refuse') return;
      for (const words of row.says ?? []) t.regex(composed.reason, words);
      // every missing default is named in the refusal
      for (const name of composed.missing) t.regex(composed.reason, new RegExp(`\\b${name} is not`));
    } else {
      t.is(composed.decision, 'proceed', composed.decision === 'refuse' ? composed.reason : '');
      if (composed.decision !== 'proceed') return;
      t.deepEqual(short(composed.layers), row.expect);
      if (row.says !== undefined && row.says.length === 0) t.deepEqual(composed.warnings, []);
      else if (row.says !== undefined) {
        t.is(composed.warnings.length, 1);
        for (const words of row.says) t.regex(composed.warnings[0]!, words);
      }
    }
    if (row.missing !== undefined) t.deepEqual(composed.missing, row.missing);
  });
}

test('compose: a default layer appears once, whatever names it (no row doubles one)', (t) => {
  for (const row of table) {
    const composed = composeLayers({
      platform: 'linux',
      defaults: LINUX,
      given: row.layers.map(given),
      replaceDefaultLayers: row.replace ?? false,
      omitDefaultLayers: row.omitDefaultLayers ?? [],
      sandbox: 'off',
    });
    if (composed.decision !== 'proceed') continue;
    const names = short(composed.layers).map((s) => s.replace(/[*:].*$|@file$/, ''));
    const givenTwice = new Set(row.layers.map((l) => l.replace(/[*:].*$|@file$/, '')).filter((n, i, all) => all.indexOf(n) !== i));
    for (const d of LINUX) if (!givenTwice.has(d.name)) t.true(names.filter((n) => n === d.name).length <= 1, `${row.label}: ${d.name}`);
  }
});

test("compose: under replaceDefaultLayers, landlock before emptyroot is a configuration error naming the fix; other orders are the user's", (t) => {
  const composed = composeLayers({
    platform: 'linux',
    defaults: LINUX,
    given: ['landlock', 'seccomp', 'emptyroot'].map(given),
    replaceDefaultLayers: true,
    omitDefaultLayers: [],
    sandbox: 'require',
  });
  t.is(composed.decision, 'invalid');
  if (composed.decision !== 'invalid') return;
  t.is(composed.layer, 'landlock');
  t.regex(composed.reason, /comes before emptyroot in layers, and emptyroot must come first: the empty root's launch link/);
  // seccomp before landlock, or another layer between them: the user's order stands.
  for (const order of [
    ['emptyroot', 'seccomp', 'landlock'],
    ['emptyroot', 'clock', 'landlock', 'seccomp'],
    ['seccomp', 'emptyroot', 'landlock'],
  ]) {
    const ordered = composeLayers({
      platform: 'linux',
      defaults: LINUX,
      given: order.map(given),
      replaceDefaultLayers: true,
      omitDefaultLayers: [],
      sandbox: 'require',
    });
    t.is(ordered.decision, 'proceed', order.join(', '));
  }
});
