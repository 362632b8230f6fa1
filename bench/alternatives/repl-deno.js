// The guest side of "deno with no permissions": one command per stdin line (a JSON string of
// source code), evaluated by indirect eval at global scope (so state persists between commands),
// one JSON answer per stdout line. Deno's permission checks are the boundary: the process was
// started with no --allow flag and --no-prompt, so every permission-gated call throws NotCapable.
const encoder = new TextEncoder();
const decoder = new TextDecoder();
// biome-ignore lint/security/noGlobalEval: the REPL under measurement evaluates what it is sent, as Deno's own REPL does
const globalEval = eval;

// Deno.stdin.read() answered faster here than Deno.stdin.readable or node:readline. A synchronous
// loop (Deno.stdin.readSync) is faster still, but then guest promises and timers never run between
// commands, which the Node REPL does let them do: so this loop stays asynchronous.
const chunk = new Uint8Array(1 << 16);
let pending = '';
for (;;) {
  const n = await Deno.stdin.read(chunk);
  if (n === null) break;
  pending += decoder.decode(chunk.subarray(0, n), { stream: true });
  let newline;
  while ((newline = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, newline);
    pending = pending.slice(newline + 1);
    if (line === '') continue;
    let answer;
    try {
      answer = { ok: true, value: globalEval(JSON.parse(line)) };
    } catch (error) {
      answer = { ok: false, error: String(error) };
    }
    const bytes = encoder.encode(JSON.stringify(answer) + '\n');
    for (let written = 0; written < bytes.length; ) written += Deno.stdout.writeSync(bytes.subarray(written));
  }
}
