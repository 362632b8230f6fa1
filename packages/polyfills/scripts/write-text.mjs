// Writes dist/src/web-polyfills.txt: WEB_POLYFILLS' exact text, as built. A worker reads it from
// there instead of receiving 568 KB through its pipe (@strata/runtime, src/isolated/bootstrap-files.ts):
// on the project's VM the message cost ~16 ms of a start, the file ~2 ms. Run by `npm run build`, after tsc.
import { writeFileSync } from 'node:fs';

const { WEB_POLYFILLS } = await import('../dist/src/index.js');
writeFileSync(new URL('../dist/src/web-polyfills.txt', import.meta.url), WEB_POLYFILLS);
console.log(`@strata/polyfills: WEB_POLYFILLS, ${WEB_POLYFILLS.length} bytes, in dist/src/web-polyfills.txt`);
