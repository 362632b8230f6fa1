// The floor a cold IsolatedRuntime is measured against: a bare node process that loads
// isolated-vm, creates an isolate and evaluates 1+1, then exits (no sandbox, no protocol).
import ivm from 'isolated-vm';
const isolate = new ivm.Isolate({ memoryLimit: 128 });
const context = isolate.createContextSync();
process.stdout.write(String(context.evalSync('1+1')));
if (process.argv[2] === '--idle') setInterval(() => {}, 1000);
