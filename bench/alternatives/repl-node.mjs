// The guest side of "Node under bubblewrap" and "Node under sandbox-runtime": one command per
// stdin line (a JSON string of source code), evaluated with node:vm in one context made at start
// (so state persists between commands, as in one Strata runtime), one JSON answer per stdout line.
// node:vm is not a security boundary: the OS sandbox around this process is.
import vm from 'node:vm';
import { createInterface } from 'node:readline';

const context = vm.createContext({});
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line === '') continue;
  let answer;
  try {
    answer = { ok: true, value: vm.runInContext(JSON.parse(line), context) };
  } catch (error) {
    answer = { ok: false, error: String(error) };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
}
