/**
 * Manual check: load real libraries into an isolate with WEB_POLYFILLS and
 * drive them the way the Runtime does. Not part of `npm test`: the
 * libraries are not dependencies of this package.
 *
 * ```sh
 * mkdir /tmp/libs && cd /tmp/libs
 * for p in echarts vega vega-lite vega-interpreter d3 dagre @turf/turf pptxgenjs three; do npm pack "$p"; done
 * for f in *.tgz; do mkdir "${f%.tgz}" && tar xzf "$f" -C "${f%.tgz}"; done
 * cd <your clone> && npm run build && npm exec -w @strata/polyfills -- node dist/scripts/smoke-libraries.js /tmp/libs [name]
 * ```
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type ivm from 'isolated-vm';
import { createSandbox, type Sandbox } from '../test/helpers/isolate.js';

const root = process.argv[2] ?? '/tmp/libs';
const only = process.argv[3];

/** `<root>/<name>-<version>/package`, from an unpacked `npm pack` tarball. */
function packageDir(name: string): string {
  const prefix = `${name.replace('@', '').replace('/', '-')}-`;
  const dir = readdirSync(root).find((d) => d.startsWith(prefix) && /^\d/.test(d.slice(prefix.length)) && !d.endsWith('.tgz'));
  if (dir === undefined) throw new Error(`${name}: not unpacked under ${root}`);
  return join(root, dir, 'package');
}

async function script(s: Sandbox, path: string): Promise<void> {
  const compiled = await s.isolate.compileScript(readFileSync(path, 'utf8'), { filename: path });
  await compiled.run(s.context);
}

/** Compiles an ES module graph; `alias` maps bare specifiers to files or modules. */
async function moduleGraph(s: Sandbox, entry: string, alias: Record<string, string | ivm.Module>): Promise<ivm.Module> {
  const byPath = new Map<string, ivm.Module>();
  const pathOf = new Map<ivm.Module, string>();
  const target = (spec: string, from: string): string | ivm.Module => alias[spec] ?? new URL(spec, `file://${from}`).pathname;
  async function compile(path: string): Promise<ivm.Module> {
    const known = byPath.get(path);
    if (known) return known;
    const m = await s.isolate.compileModule(readFileSync(path, 'utf8'), { filename: path });
    byPath.set(path, m);
    pathOf.set(m, path);
    for (const spec of m.dependencySpecifiers) {
      const t = target(spec, path);
      if (typeof t === 'string') await compile(t);
    }
    return m;
  }
  const root = await compile(entry);
  await root.instantiate(s.context, (spec, referrer) => {
    const t = target(spec, pathOf.get(referrer)!);
    return typeof t === 'string' ? byPath.get(t)! : t;
  });
  await root.evaluate();
  return root;
}

const checks: Record<string, (s: Sandbox) => Promise<unknown>> = {
  async echarts(s) {
    await script(s, join(packageDir('echarts'), 'dist/echarts.min.js'));
    return s.run(`(async () => {
      const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width: 400, height: 300 });
      chart.setOption({ xAxis: { data: ['a', 'b', 'c'] }, yAxis: {}, series: [{ type: 'bar', data: [1, 2, 3] }] });
      const svg = chart.renderToSVGString();
      await new Promise((r) => setTimeout(r, 2000)); // the animation loop runs on virtual time meanwhile
      const again = chart.renderToSVGString();
      chart.dispose();
      return { svg: svg.slice(0, 24), bytes: svg.length, after: again.length };
    })()`);
  },
  async vega(s) {
    await script(s, join(packageDir('vega'), 'build/vega.min.js'));
    await script(s, join(packageDir('vega-lite'), 'build/vega-lite.min.js'));
    // vega-interpreter is an ES module importing vega-util, which vega re-exports.
    const util = await s.isolate.compileModule('export const { ascending, isString, DisallowedObjectProperties } = globalThis.vega;');
    await util.instantiate(s.context, () => {
      throw new Error('vega-util shim has no imports');
    });
    const interpreter = await moduleGraph(s, join(packageDir('vega-interpreter'), 'build/vega-interpreter.js'), {
      'vega-util': util,
    });
    await s.context.global.set('vegaInterpreter', interpreter.namespace.derefInto());
    return s.run(`(async () => {
      const vl = { data: { values: [{ a: 'A', b: 28 }, { a: 'B', b: 55 }] }, mark: 'bar',
        encoding: { x: { field: 'a', type: 'nominal' }, y: { field: 'b', type: 'quantitative' } } };
      const view = new vega.View(vega.parse(vegaLite.compile(vl).spec, null, { ast: true }),
        { renderer: 'none', expr: vegaInterpreter.expressionInterpreter });
      const svg = await view.toSVG();
      view.finalize();
      return { svg: svg.slice(0, 24), bytes: svg.length };
    })()`);
  },
  async d3(s) {
    await script(s, join(packageDir('d3'), 'dist/d3.min.js'));
    return s.run(`(async () => {
      const t0 = d3.now();
      await new Promise((r) => d3.timeout(r, 250));
      let ticks = 0;
      await new Promise((r) => { const i = d3.interval(() => { if (++ticks === 5) { i.stop(); r(); } }, 100); });
      let frames = 0;
      await new Promise((r) => { const t = d3.timer((elapsed) => { frames++; if (elapsed > 500) { t.stop(); r(); } }); });
      return { elapsed: Math.round(d3.now() - t0), ticks, frames, x: d3.scaleLinear().domain([0, 10]).range([0, 100])(5) };
    })()`);
  },
  async dagre(s) {
    await script(s, join(packageDir('dagre'), 'dist/dagre.min.js'));
    return s.run(`(() => {
      const g = new dagre.graphlib.Graph(); g.setGraph({}); g.setDefaultEdgeLabel(() => ({}));
      g.setNode('a', { width: 10, height: 10 }); g.setNode('b', { width: 10, height: 10 }); g.setEdge('a', 'b');
      dagre.layout(g);
      return [g.node('a').y, g.node('b').y];
    })()`);
  },
  async turf(s) {
    await script(s, join(packageDir('@turf/turf'), 'turf.min.js'));
    return s.run(`(() => {
      const p = turf.polygon([[[0, 0], [0, 1], [1, 1], [1, 0], [0, 0]]]);
      return { area: Math.round(turf.area(p)), buffered: turf.buffer(p, 10).geometry.type };
    })()`);
  },
  async pptxgenjs(s) {
    await script(s, join(packageDir('pptxgenjs'), 'dist/pptxgen.bundle.js'));
    return s.run(`(async () => {
      const p = new PptxGenJS();
      p.addSlide().addText('Hello', { x: 1, y: 1 });
      const bytes = await p.write({ outputType: 'uint8array' });
      const blob = await p.write({ outputType: 'blob' });
      return { zip: bytes[0] === 0x50 && bytes[1] === 0x4b, bytes: bytes.length, blob: blob.size };
    })()`);
  },
  async three(s) {
    const dir = packageDir('three');
    const three = await moduleGraph(s, join(dir, 'build/three.module.js'), {});
    const exporter = await moduleGraph(s, join(dir, 'examples/jsm/exporters/GLTFExporter.js'), { three });
    await s.context.global.set('THREE', three.namespace.derefInto());
    await s.context.global.set('GLTF', exporter.namespace.derefInto());
    return s.run(`(async () => {
      const scene = new THREE.Scene();
      scene.add(new THREE.Mesh(new THREE.BoxGeometry(1, 1, 1), new THREE.MeshStandardMaterial({ color: 0xff0000 })));
      const exporter = new GLTF.GLTFExporter();
      const json = await exporter.parseAsync(scene, { binary: false });
      const glb = await exporter.parseAsync(scene, { binary: true }); // Blob + FileReader
      return { meshes: json.meshes.length, glb: glb.byteLength, magic: new TextDecoder().decode(new Uint8Array(glb, 0, 4)) };
    })()`);
  },
};

let failed = 0;
for (const [name, check] of Object.entries(checks)) {
  if (only !== undefined && only !== name) continue;
  const s = await createSandbox();
  const start = performance.now();
  try {
    const outcome = await check(s);
    const ok = (outcome as { ok?: boolean }).ok === true;
    if (!ok) failed++;
    console.log(ok ? 'ok  ' : 'FAIL', name, `${Math.round(performance.now() - start)} ms`, JSON.stringify(outcome));
  } catch (e) {
    failed++;
    console.log('FAIL', name, e instanceof Error ? e.stack : e);
  }
  const logs = s.logs();
  if (logs.length > 0) console.log('     console:', JSON.stringify(logs).slice(0, 500));
  s.dispose();
}
process.exitCode = failed === 0 ? 0 : 1;
