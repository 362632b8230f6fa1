import test from 'ava';
import { createSandbox, type Sandbox } from './helpers/isolate.js';

let s: Sandbox;
test.before(async () => {
  s = await createSandbox();
});
test.after.always(() => s.dispose());

test('Blob concatenates strings, buffers, views and blobs', async (t) => {
  const r = await s.run(`(async () => {
    const inner = new Blob(['in']);
    const view = new Uint8Array([0, 65, 66, 0]).subarray(1, 3);
    const b = new Blob(['a€', new Uint8Array([67]).buffer, view, inner, new DataView(new Uint8Array([68]).buffer), 5], { type: 'Text/Plain' });
    return { size: b.size, type: b.type, text: await b.text(), bytes: Array.from(await b.bytes()), ab: (await b.arrayBuffer()).byteLength };
  })()`);
  t.deepEqual(r.value, { size: 11, type: 'text/plain', text: 'a€CABinD5', bytes: [97, 226, 130, 172, 67, 65, 66, 105, 110, 68, 53], ab: 11 });
});

test('Blob copies its parts and is immutable', async (t) => {
  const r = await s.run(`(async () => {
    const source = new Uint8Array([1, 2, 3]);
    const b = new Blob([source]);
    source[0] = 9;
    const bytes = await b.bytes();
    bytes[1] = 9;
    return Array.from(await b.bytes());
  })()`);
  t.deepEqual(r.value, [1, 2, 3]);
});

test('Blob options: type normalisation and line endings', (t) => {
  t.is(s.value(`new Blob([], { type: 'IMAGE/PNG' }).type`), 'image/png');
  t.is(s.value(`new Blob([], { type: 'a\\u00e9' }).type`), '');
  t.is(s.value(`new Blob().size`), 0);
  t.is(s.value(`new Blob(['a\\r\\nb\\rc\\n'], { endings: 'native' }).size`), 6);
  t.is(s.value(`new Blob(['a\\r\\nb'], { endings: 'transparent' }).size`), 4);
  t.throws(() => s.value(`new Blob([], { endings: 'dos' })`), { message: /EndingType/ });
  t.throws(() => s.value(`new Blob('abc')`), { message: /sequence/ });
  t.throws(() => s.value(`new Blob({})`), { message: /iterator/ });
  t.is(s.value(`new Blob(['\\uD800']).size`), 3); // USVString: lone surrogate → U+FFFD
});

test('Blob.slice follows the File API', async (t) => {
  const r = await s.run(`(async () => {
    const b = new Blob(['0123456789'], { type: 'text/plain' });
    const t = (x) => x.text();
    return [await t(b.slice(2, 5)), await t(b.slice(-3)), await t(b.slice(-3, -1)), await t(b.slice(5, 2)),
      await t(b.slice(0, 100)), b.slice(1, 2).type, b.slice(1, 2, 'X/Y').type, await t(b.slice(1.5, 3.5)), await t(b.slice(2.5, 4.5)), // [Clamp]: half to even
      await t(b.slice(2, 8).slice(1, 3))];
  })()`);
  t.deepEqual(r.value, ['234', '789', '78', '', '0123456789', '', 'x/y', '23', '23', '34']);
});

test('Blob.text() decodes UTF-8 with replacement and drops a BOM', async (t) => {
  const r = await s.run(`new Blob([new Uint8Array([0xef, 0xbb, 0xbf, 0x61, 0xff])]).text()`);
  t.is(r.value, 'a\ufffd');
  t.deepEqual(s.value(`[Object.prototype.toString.call(new Blob()), Object.keys(Blob.prototype).sort().join()]`), [
    '[object Blob]',
    'arrayBuffer,bytes,size,slice,stream,text,type',
  ]);
});

test('FileReader reads as text, ArrayBuffer, binary string and data URL', async (t) => {
  const r = await s.run(`(async () => {
    const read = (method, blob, ...args) => new Promise((resolve, reject) => {
      const fr = new FileReader();
      fr.onload = () => resolve(fr.result);
      fr.onerror = () => reject(fr.error);
      fr[method](blob, ...args);
    });
    const blob = new Blob(['hé'], { type: 'text/plain' });
    return {
      text: await read('readAsText', blob),
      buffer: Array.from(new Uint8Array(await read('readAsArrayBuffer', blob))),
      binary: await read('readAsBinaryString', blob),
      dataURL: await read('readAsDataURL', blob),
      untyped: await read('readAsDataURL', new Blob([new Uint8Array([255])])),
      latin1: await read('readAsText', new Blob([new Uint8Array([0xe9])]), 'latin1'),
      bomWins: await read('readAsText', new Blob([new Uint8Array([0xff, 0xfe, 0x61, 0x00])]), 'utf-8'),
    };
  })()`);
  t.deepEqual(r.value, {
    text: 'hé',
    buffer: [0x68, 0xc3, 0xa9],
    binary: 'h\u00c3\u00a9',
    dataURL: 'data:text/plain;base64,aMOp',
    untyped: 'data:application/octet-stream;base64,/w==',
    latin1: 'é',
    bomWins: 'a',
  });
});

test('FileReader fires its events in order, asynchronously, on the task queue', async (t) => {
  const r = await s.run(`new Promise((resolve) => {
    const fr = new FileReader();
    const log = [];
    for (const type of ['loadstart', 'progress', 'load', 'loadend', 'abort', 'error']) {
      fr.addEventListener(type, (e) => log.push(type + ':' + fr.readyState + ':' + e.loaded + '/' + e.total + ':' + (e instanceof ProgressEvent) + ':' + e.isTrusted));
    }
    fr.onloadend = () => resolve({ log, result: fr.result });
    fr.readAsText(new Blob(['abc']));
    log.push('sync:' + fr.readyState + ':' + fr.result + ':' + __strataEventLoop.pending());
    let busy = '';
    try { fr.readAsText(new Blob(['x'])); } catch (e) { busy = e.name; }
    log.push(busy);
  })`);
  t.deepEqual(r.value, {
    log: ['sync:1:null:2', 'InvalidStateError', 'loadstart:1:0/3:true:true', 'progress:1:3/3:true:true', 'load:2:3/3:true:true', 'loadend:2:3/3:true:true'],
    result: 'abc',
  });
});

test('FileReader.abort() cancels the read and fires abort then loadend', async (t) => {
  const r = await s.run(`new Promise((resolve) => {
    const fr = new FileReader();
    const log = [];
    for (const type of ['loadstart', 'load', 'abort', 'loadend']) fr.addEventListener(type, () => log.push(type));
    fr.readAsArrayBuffer(new Blob(['abc']));
    fr.abort();
    log.push('state:' + fr.readyState + ':' + fr.result);
    setTimeout(() => {
      // A reader can be reused after an abort.
      fr.onload = () => resolve({ log, result: new TextDecoder().decode(fr.result) });
      fr.readAsArrayBuffer(new Blob(['again']));
    }, 10);
  })`);
  t.deepEqual(r.value, { log: ['abort', 'loadend', 'state:2:null', 'loadstart', 'load', 'loadend'], result: 'again' });
});

test('FileReader validates its input and has the web constants', (t) => {
  t.throws(() => s.value(`new FileReader().readAsText('nope')`), { message: /not of type 'Blob'/ });
  t.throws(() => s.value(`new FileReader().readAsText()`), { message: /1 argument required/ });
  t.deepEqual(
    s.value(
      `[FileReader.EMPTY, FileReader.LOADING, FileReader.DONE, new FileReader().readyState, new FileReader().DONE, new FileReader() instanceof EventTarget]`,
    ),
    [0, 1, 2, 0, 2, true],
  );
});
