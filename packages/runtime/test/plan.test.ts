import test from 'ava';
import type { LayerRequirement } from '../src/index.js';
import { planLayers, type LayerCapability } from '../src/layers/index.js';

const probes: Record<'full' | 'partial' | 'none', LayerCapability> = {
  full: { available: true, provides: ['a', 'b'], missing: [] },
  partial: { available: true, provides: ['a'], missing: ['b'] },
  none: { available: false, provides: [], missing: ['a', 'b'] },
};

// Every combination of requirement and probe result, one layer at a time.
const table: [LayerRequirement, keyof typeof probes, 'proceed' | 'refuse', 'full' | 'partial' | 'none' | undefined, boolean | undefined, boolean][] = [
  // requirement, probe, decision, enforcement, applied, warned
  ['require', 'full', 'proceed', 'full', true, false],
  ['require', 'partial', 'refuse', undefined, undefined, false],
  ['require', 'none', 'refuse', undefined, undefined, false],
  ['auto', 'full', 'proceed', 'full', true, false],
  ['auto', 'partial', 'proceed', 'partial', true, true],
  ['auto', 'none', 'proceed', 'none', false, true],
  ['off', 'full', 'proceed', 'none', false, false],
  ['off', 'partial', 'proceed', 'none', false, false],
  ['off', 'none', 'proceed', 'none', false, false],
];

for (const [requirement, probe, decision, enforcement, applied, warned] of table) {
  test(`plan: ${requirement} with a ${probe} probe → ${decision}${enforcement ? `, ${enforcement}` : ''}`, (t) => {
    const plan = planLayers([{ name: 'x', requirement, capability: probes[probe] }]);
    t.is(plan.decision, decision);
    if (plan.decision === 'proceed') {
      t.is(plan.layers[0]?.enforcement, enforcement);
      t.is(plan.layers[0]?.apply, applied);
      t.is(plan.warnings.length > 0, warned);
      if (warned) t.regex(plan.warnings[0]!, /^x is /);
    } else {
      t.deepEqual(plan.gaps, [`x: ${probes[probe].missing.join(', ')}`]);
    }
  });
}

test('plan: every gap is named at once, and nothing is planned when one is refused', (t) => {
  const plan = planLayers([
    { name: 'ok', requirement: 'require', capability: probes.full },
    { name: 'half', requirement: 'require', capability: probes.partial },
    { name: 'soft', requirement: 'auto', capability: probes.none },
    { name: 'gone', requirement: 'require', capability: probes.none },
  ]);
  t.deepEqual(plan, { decision: 'refuse', gaps: ['half: b', 'gone: a, b'] });
});

test('plan: mixed requirements proceed in order, with one warning per degraded layer', (t) => {
  const plan = planLayers([
    { name: 'a', requirement: 'require', capability: probes.full },
    { name: 'b', requirement: 'auto', capability: probes.partial },
    { name: 'c', requirement: 'auto', capability: probes.none },
    { name: 'd', requirement: 'off', capability: probes.full },
  ]);
  t.is(plan.decision, 'proceed');
  if (plan.decision !== 'proceed') return;
  t.deepEqual(
    plan.layers.map((l) => [l.name, l.enforcement, l.apply]),
    [
      ['a', 'full', true],
      ['b', 'partial', true],
      ['c', 'none', false],
      ['d', 'none', false],
    ],
  );
  t.deepEqual(plan.warnings, ['b is only partly in force: b', 'c is not in force: a, b']);
});

test('plan: an unavailable layer with nothing listed as missing still says why', (t) => {
  const plan = planLayers([{ name: 'x', requirement: 'require', capability: { available: false, provides: [], missing: [] } }]);
  t.deepEqual(plan, { decision: 'refuse', gaps: ['x: not available on this platform'] });
});
