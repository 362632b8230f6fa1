// What each failure of the database, or of the way to it, is called in a JournalStoreError's
// message, and which ones leave a connection that must not go back to the pool. A table: errors
// as the pg driver and Node's sockets make them (a SQLSTATE, an errno, or only a message).
import test from 'ava';
import { connectionLost, describeDatabaseError } from '../src/database-errors.js';

const coded = (code: string, message: string) => Object.assign(new Error(message), { code });

const cases: [string, Error, RegExp, boolean][] = [
  ['a statement timeout', coded('57014', 'canceling statement due to statement timeout'), /ran past statementTimeoutMs \(250 ms\)/, false],
  ['a cancel', coded('57014', 'canceling statement due to user request'), /cancelled the statement/, false],
  [
    'an idle transaction ended',
    coded('25P03', 'terminating connection due to idle-in-transaction timeout'),
    /sat idle between two statements for too long/,
    true,
  ],
  ['pg_terminate_backend', coded('57P01', 'terminating connection due to administrator command'), /ended the connection.*administrator command/, true],
  ['a server starting', coded('57P03', 'the database system is starting up'), /shutting down, restarting/, true],
  ['a connection failure', coded('08006', 'connection failure'), /connection to the database failed/, true],
  ['a bad password', coded('28P01', 'password authentication failed for user "app"'), /refused the login/, false],
  ['no such database', coded('3D000', 'database "x" does not exist'), /database does not exist/, false],
  ['no privilege', coded('42501', 'permission denied for schema public'), /lacks a privilege the store needs .*README/, false],
  ['a dropped table', coded('42P01', 'relation "public.strata_sessions" does not exist'), /a table of the store is missing/, false],
  ['no connection slot', coded('53300', 'sorry, too many clients already'), /no connection left/, false],
  ['a full disk', coded('53100', 'could not extend file'), /ran out of a resource/, false],
  ['a deadlock', coded('40P01', 'deadlock detected'), /conflict with another one.*try again/, false],
  ['a trigger that raised', coded('P0001', 'disk says no'), /^the database refused the statement: disk says no \(SQLSTATE P0001\)$/, false],
  ['a refused connection', coded('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432'), /^cannot reach the database \(connect ECONNREFUSED/, true],
  ['no socket', coded('ENOENT', 'connect ENOENT /run/postgresql/.s.PGSQL.5432'), /^cannot reach the database/, true],
  ['a broken pipe', coded('EPIPE', 'write EPIPE'), /^cannot reach the database/, true],
  ['an unknown host', coded('ENOTFOUND', 'getaddrinfo ENOTFOUND db'), /^cannot reach the database/, true],
  ['a connection dropped', new Error('Connection terminated unexpectedly'), /connection to the database was lost/, true],
  ['no connection in time', new Error('timeout exceeded when trying to connect'), /within the pool's connect timeout/, false],
  ['a silent server', new Error('Query read timeout'), /did not answer within statementTimeoutMs \(250 ms\)/, true],
  ['an ended pool', new Error('Cannot use a pool after calling end on the pool'), /pool of connections was ended/, false],
  ['anything else', new Error('something odd'), /^something odd$/, false],
];
for (const [what, error, described, lost] of cases)
  test(`${what}: ${described.source}`, (t) => {
    t.regex(describeDatabaseError(error, 250), described);
    t.is(connectionLost(error), lost);
  });
