// The main entry is a deliberate list: what the other Strata packages and the README use. Adding
// a name here is a decision (it becomes API); an internal that leaks into the entry fails this test.
import test from 'ava';

const MAIN = [
  // frames and messages
  'encodeFrame',
  'decodeMessage',
  'FrameReader',
  'PROTOCOL_VERSION',
  'MESSAGE_SPECS',
  // the message table's check: the runtime's worker runs it on what its native codec reads and writes
  'validateMessage',
  'MESSAGE_TYPES',
  'CONSOLE_LEVELS',
  'COMMAND_NAMES',
  // one value, without a frame
  'encodeValue',
  'decodeValue',
  'checkEncodable',
  'scanCbor',
  // limits
  'DEFAULT_LIMITS',
  'resolveLimits',
  // errors: the protocol's own, and the payload that carries a guest's
  'ProtocolError',
  'EXCEPTION_CLASSES',
  'ERROR_TEXT_LIMITS',
  'isExceptionClass',
  'capText',
  'errorPayload',
  // guest values as lossless JSON
  'toTaggedJson',
  'fromTaggedJson',
  // the one walk over nested values
  'ValueWalk',
  'WalkKind',
  // an object's built-in kind by its brand: the runtime's value checks ask it too
  'builtinKind',
  // how a name is spelled in a path or a declaration
  'isAsciiIdentifier',
].sort();

test('the main entry exports exactly what the other packages and the README use', async (t) => {
  const main = await import('@strata/wire');
  t.deepEqual(Object.keys(main).sort(), MAIN);
});
