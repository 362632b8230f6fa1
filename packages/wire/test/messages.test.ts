import test from 'ava';
import {
  COMMAND_NAMES,
  CONSOLE_LEVELS,
  ERROR_TEXT_LIMITS,
  EXCEPTION_CLASSES,
  MESSAGE_SPECS,
  MESSAGE_TYPES,
  PROTOCOL_VERSION,
  ProtocolError,
  capText,
  decodeMessage,
  encodeValue,
  errorPayload,
  isExceptionClass,
  type ExceptionClass,
  type Message,
  type MessageOf,
} from '../src/index.js';
// internal to the package, not on the main entry
import { TRUNCATION_MARKER } from '../src/error-payload.js';
import { validateMessage } from '../src/messages.js';

/** Encode any value (bypassing message checks) and decode it as a message. */
function decodeAsMessage(value: unknown): Message {
  return decodeMessage(encodeValue(value));
}

function refused(t: import('ava').ExecutionContext, value: unknown, pattern: RegExp): void {
  t.throws(() => decodeAsMessage(value), { instanceOf: ProtocolError, message: pattern });
}

test('the message table lists the protocol messages', (t) => {
  t.deepEqual([...MESSAGE_TYPES], Object.keys(MESSAGE_SPECS));
  // the runtime adds its own types to the table; these are the ones the wire package promises
  for (const type of ['hello', 'configure', 'eval', 'evalModule', 'call', 'callResult', 'result', 'error', 'console', 'report', 'command']) {
    t.true(MESSAGE_TYPES.includes(type as never), type);
  }
  t.true(Object.isFrozen(MESSAGE_SPECS));
  t.true(Object.isFrozen(MESSAGE_SPECS.eval));
  t.is(PROTOCOL_VERSION, 2);
  t.deepEqual([...CONSOLE_LEVELS], ['log', 'info', 'warn', 'error', 'debug', 'trace']);
  t.deepEqual([...COMMAND_NAMES], ['bind', 'revoke', 'addModule', 'dispose', 'open', 'timeline', 'codeCache']);
});

test('the TypeScript union follows the table', (t) => {
  const evalMessage: MessageOf<'eval'> = { type: 'eval', id: 1, code: 'x' };
  const call: MessageOf<'call'> = { type: 'call', id: 1, name: 'f', args: [], sync: false };
  const message: Message = evalMessage;
  if (message.type === 'eval') t.is(message.code, 'x');
  // @ts-expect-error a required field is missing
  const missing: MessageOf<'call'> = { type: 'call', id: 1, name: 'f', args: [] };
  // @ts-expect-error unknown command name
  const badCommand: MessageOf<'command'> = { type: 'command', id: 1, name: 'nope', params: {} };
  t.truthy(call && missing && badCommand);
});

test('refuses a value that is not a message object', (t) => {
  refused(t, [], /message must be a plain object/);
  refused(t, 'hello', /message must be a plain object/);
  refused(t, new Map([['type', 'hello']]), /message must be a plain object/);
  refused(t, {}, /message type must be a string/);
  refused(t, { type: 1 }, /message type must be a string/);
});

test('refuses an unknown message type, inherited names included', (t) => {
  refused(t, { type: 'shutdown' }, /unknown message type "shutdown"/);
  refused(t, { type: 'constructor' }, /unknown message type/);
  refused(t, { type: '__proto__' }, /unknown message type/);
  refused(t, { type: 'toString' }, /unknown message type/);
});

test('refuses missing, extra and wrongly typed fields', (t) => {
  refused(t, { type: 'hello' }, /hello message is missing \$\.version/);
  refused(t, { type: 'hello', version: 1, pid: 5 }, /unexpected field "pid"/);
  refused(t, { type: 'hello', version: 1.5 }, /\$\.version must be a non-negative safe integer/);
  refused(t, { type: 'hello', version: 2 ** 53 }, /non-negative safe integer/);
  refused(t, { type: 'hello', version: -1 }, /non-negative safe integer/);
  refused(t, { type: 'hello', version: 1n }, /non-negative safe integer/);
  refused(t, { type: 'eval', id: 1, code: ['x'] }, /\$\.code must be a string/);
  refused(t, { type: 'eval', id: 1, code: 'x', options: [] }, /\$\.options must be a plain object/);
  refused(t, { type: 'eval', id: 1, code: 'x', options: new Map() }, /plain object/);
  refused(t, { type: 'call', id: 1, name: 'f', args: {}, sync: true }, /\$\.args must be an array/);
  refused(t, { type: 'call', id: 1, name: 'f', args: [], sync: 1 }, /\$\.sync must be a boolean/);
  refused(t, { type: 'console', level: 'shout', text: 'x' }, /\$\.level "shout" is not a known console level/);
  refused(t, { type: 'command', id: 1, name: 'eval', params: {} }, /\$\.name "eval" is not a known command name/);
  refused(t, { type: 'report', report: 'ok' }, /\$\.report must be a plain object/);
});

test('optional fields may be absent or undefined; required ones may not be undefined', (t) => {
  t.notThrows(() => decodeAsMessage({ type: 'error', error: { class: 'JsError', message: 'm' } }));
  t.notThrows(() => decodeAsMessage({ type: 'error', id: undefined, error: { class: 'JsError', message: 'm' } }));
  refused(t, { type: 'eval', id: undefined, code: 'x' }, /\$\.id must be a non-negative safe integer/);
  // a `value` field is required but undefined is a value
  t.notThrows(() => decodeAsMessage({ type: 'result', id: 1, value: undefined }));
  refused(t, { type: 'result', id: 1 }, /missing \$\.value/);
});

test('callResult carries exactly one of a value or an error', (t) => {
  t.notThrows(() => decodeAsMessage({ type: 'callResult', id: 1, outcome: { ok: true, value: null } }));
  t.notThrows(() => decodeAsMessage({ type: 'callResult', id: 1, outcome: { ok: false, error: { class: 'HostFunctionError', message: 'x' } } }));
  refused(t, { type: 'callResult', id: 1, outcome: { ok: true } }, /\$\.outcome\.value is missing/);
  refused(t, { type: 'callResult', id: 1, outcome: { ok: false } }, /\$\.outcome\.error is missing/);
  refused(t, { type: 'callResult', id: 1, outcome: { ok: true, value: 1, error: 2 } }, /unexpected field "error"/);
  refused(t, { type: 'callResult', id: 1, outcome: { ok: 'yes', value: 1 } }, /\$\.outcome\.ok must be a boolean/);
  refused(t, { type: 'callResult', id: 1, outcome: { ok: false, error: { class: 'Bogus', message: '' } } }, /not a known exception class/);
});

test('error payloads name a known class and keep text within the caps', (t) => {
  const error = (payload: unknown) => ({ type: 'error', id: 1, error: payload });
  refused(t, error({ class: 'TypeError', message: 'x' }), /\$\.error\.class "TypeError" is not a known exception class/);
  refused(t, error({ class: 'Object', message: 'x' }), /not a known exception class/);
  refused(t, error({ class: '__proto__', message: 'x' }), /not a known exception class/);
  refused(t, error({ class: 1, message: 'x' }), /\$\.error\.class must be a string/);
  refused(t, error({ message: 'x' }), /\$\.error\.class must be a string/);
  refused(t, error({ class: 'JsError' }), /\$\.error\.message is missing/);
  refused(t, error({ class: 'JsError', message: 1 }), /\$\.error\.message must be a string/);
  refused(t, error({ class: 'JsError', message: 'x', cause: 'y' }), /\$\.error has unexpected field "cause"/);
  refused(t, error({ class: 'JsError', message: 'x'.repeat(4097) }), /\$\.error\.message is longer than 4096/);
  refused(t, error({ class: 'JsError', message: '', stack: 'x'.repeat(16385) }), /\$\.error\.stack is longer than 16384/);
  refused(t, error({ class: 'JsError', message: '', name: 'x'.repeat(129) }), /\$\.error\.name is longer than 128/);
  refused(t, error('boom'), /\$\.error must be an error payload object/);
  t.notThrows(() => decodeAsMessage(error({ class: 'JsError', message: 'x'.repeat(4096), stack: 's', name: 'RangeError' })));
});

test('every exception class is accepted; the list is closed and exported', (t) => {
  t.deepEqual(
    [...EXCEPTION_CLASSES],
    [
      'JsError',
      'RuntimeTimeout',
      'HeapLimitExceeded',
      'ValueNotTransferable',
      'ResultTooLarge',
      'WorkerCrashed',
      'HostFunctionError',
      'ModuleNotFound',
      'StrataError',
      'SandboxUnavailable',
      'LayerFailed',
      'LayerConfigError',
    ],
  );
  t.true(Object.isFrozen(EXCEPTION_CLASSES));
  for (const cls of EXCEPTION_CLASSES) {
    t.true(isExceptionClass(cls));
    t.notThrows(() => decodeAsMessage({ type: 'error', error: { class: cls, message: '' } }));
  }
  t.false(isExceptionClass('Error'));
  t.false(isExceptionClass('hasOwnProperty'));
  t.false(isExceptionClass(undefined));
});

test('errorPayload caps and cleans untrusted text', (t) => {
  const payload = errorPayload('JsError', 'm'.repeat(10000), { stack: 's'.repeat(50000), name: 'n'.repeat(500) });
  t.is(payload.message.length, ERROR_TEXT_LIMITS.message);
  t.true(payload.message.endsWith(TRUNCATION_MARKER));
  t.is(payload.stack?.length, ERROR_TEXT_LIMITS.stack);
  t.is(payload.name?.length, ERROR_TEXT_LIMITS.name);
  t.notThrows(() => decodeAsMessage({ type: 'error', error: payload }));
  t.deepEqual(errorPayload('RuntimeTimeout', 'short'), { class: 'RuntimeTimeout', message: 'short' });
  t.is(errorPayload('JsError', 'a\uD800b').message, 'a\uFFFDb');
  t.throws(() => errorPayload('Nope' as ExceptionClass, 'x'), { instanceOf: ProtocolError, message: /unknown exception class "Nope"/ });
});

test('capText never splits a surrogate pair and always fits the cap', (t) => {
  for (let max = 0; max < 30; max++) {
    for (const text of ['😀'.repeat(20), `a${'😀'.repeat(20)}`, 'plain text that is long enough']) {
      const capped = capText(text, max);
      t.true(capped.length <= max, `${max}: ${capped}`);
      t.true(capped.isWellFormed(), `${max}: ${JSON.stringify(capped)}`);
    }
  }
  t.is(capText('short', 10), 'short');
  t.is(capText('0123456789abcdef', 14), `01${TRUNCATION_MARKER}`);
});

test('validateMessage returns the message it was given', (t) => {
  const message = { type: 'hello', version: 1 };
  t.is<unknown, unknown>(validateMessage(message), message);
});
