import { Runtime } from '@strata/runtime';
const med = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];
const rows = [];
for (let r = 0; r < 12; r++) {
  const rt = await Runtime.start();
  await rt.eval('0');
  await new Promise((res) => setTimeout(res, Number(process.env.IDLE ?? 150)));
  const t = [];
  for (let k = 0; k < 10; k++) { const t0 = process.hrtime.bigint(); await rt.eval(`${k}+1`); t.push(Number(process.hrtime.bigint() - t0) / 1000); }
  rows.push(t);
  await rt.close();
}
console.log(rows[0].map((_, k) => med(rows.map((r) => r[k])).toFixed(0)).join(' '));
