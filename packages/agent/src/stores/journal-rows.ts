/**
 * Between a journal and a store's rows, both ways, with no I/O: `assembleJournal` turns what a
 * store gave back into a checked journal (every row parsed on its own, so a corrupted one is
 * named by its session, cell and seq), and `JournalRows` works out what a write must carry: the
 * rows that changed since the last write the store confirmed.
 *
 * @module
 */
import { JournalError, SessionLimitExceeded } from '../errors.js';
import { checkJournalSized, type CallRecord, type CellRecord, type Journal, type JournalLimits } from '../journal.js';
import type { CallRow, CellRow, JournalAppend, StoredRows } from './journal-store.js';

/** A row as a database driver gives it: columns by name. */
type DatabaseRow = Readonly<Record<string, unknown>>;

/**
 * A journal from a store's rows, checked as `checkJournal` checks one read from outside.
 * Refuses before parsing anything when the rows are larger than `maxJournalBytes`.
 *
 * @throws {@link JournalError} naming the session and the row that is wrong;
 * `SessionLimitExceeded` for a journal past one of `limits`.
 */
export function assembleJournal(rows: StoredRows, limits: JournalLimits = {}): { journal: Journal; bytes: number } {
  const sessionId = rows.session.sessionId;
  const where = (detail: string) => `session ${JSON.stringify(sessionId)}: ${detail}`;
  if (limits.maxJournalBytes !== undefined) {
    let bytes = rows.session.settings.length;
    for (const row of rows.cells) bytes += row.record.length;
    for (const row of rows.calls) bytes += row.record.length;
    // Characters, not bytes: a lower bound of the size, enough to refuse before parsing.
    if (bytes > limits.maxJournalBytes) {
      throw new SessionLimitExceeded(
        'maxJournalBytes',
        where(
          `the stored journal is at least ${bytes} bytes, over this session's maxJournalBytes (${limits.maxJournalBytes}): resume it with a larger maxJournalBytes`,
        ),
      );
    }
  }
  const settings = parseRow(rows.session.settings, where('the settings row'), {});
  const cells: CellRecord[] = [];
  const byCell = new Map<number, CellRecord>();
  for (const row of rows.cells) {
    const cell = parseRow(row.record, where(`the row of cell ${row.cell}`), { cell: row.cell });
    if (cell === null || typeof cell !== 'object' || Array.isArray(cell))
      throw new JournalError(where(`the row of cell ${row.cell} is not an object`), { cell: row.cell });
    const record = { ...(cell as object), cell: row.cell, calls: [] as CallRecord[] } as unknown as CellRecord;
    cells.push(record);
    byCell.set(row.cell, record);
  }
  for (const row of rows.calls) {
    const call = parseRow(row.record, where(`the row of call ${row.seq} (cell ${row.cell})`), { cell: row.cell, seq: row.seq });
    const cell = byCell.get(row.cell);
    if (cell === undefined)
      throw new JournalError(where(`call ${row.seq} belongs to cell ${row.cell}, which the store does not have`), { cell: row.cell, seq: row.seq });
    if (call === null || typeof call !== 'object' || Array.isArray(call))
      throw new JournalError(where(`the row of call ${row.seq} is not an object`), { cell: row.cell, seq: row.seq });
    cell.calls.push({ ...(call as object), seq: row.seq } as CallRecord);
  }
  const journal = { format: 'strata.agent.journal', version: rows.session.format, session: sessionId, settings, cells, nextSeq: rows.session.nextSeq };
  try {
    return checkJournalSized(journal, limits);
  } catch (error) {
    if (error instanceof JournalError)
      throw new JournalError(where(error.message), {
        ...(error.cell === undefined ? {} : { cell: error.cell }),
        ...(error.seq === undefined ? {} : { seq: error.seq }),
      });
    throw error;
  }
}

function parseRow(text: string, what: string, at: { cell?: number; seq?: number }): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new JournalError(`${what} is not JSON (${(error as Error).message}); the store's row is corrupted`, at);
  }
}

/** A cell's row as written: the record without its number and calls; an open cell says `running`. */
function cellRowText(cell: CellRecord, open: boolean): string {
  const { cell: _number, calls: _calls, ...rest } = cell;
  return JSON.stringify(open ? { ...rest, status: 'running' } : rest);
}

function callRowText(call: CallRecord): string {
  const { seq: _seq, ...rest } = call;
  return JSON.stringify(rest);
}

/** A cell whose rows can still change: the last one, or one with a call whose tool may still end (`started`, not reconciled). */
function unsettled(cell: CellRecord, last: boolean): boolean {
  return (
    last || cell.status === 'running' || cell.status === 'awaiting-approval' || cell.calls.some((c) => c.status === 'started' && c.afterCrash === undefined)
  );
}

/**
 * What the store holds of one session, as far as this process knows, and the write that brings
 * it up to a journal: only the rows that differ. A settled cell (not the last, and nothing of it
 * can change any more) is forgotten once written, so what is kept, and what each write compares,
 * is the size of the cells that can still change.
 */
export class JournalRows {
  /** Cells the store holds. */
  #storedCells: number;
  /** The rows of each unsettled stored cell (its own and its calls'), as the store has them. */
  readonly #written = new Map<number, { cell: string; calls: Map<number, string> }>();
  #nextSeq: number;

  /** The rows of `journal` as a store holds them (a loaded journal), or an empty session. */
  constructor(journal: Journal | undefined) {
    this.#storedCells = journal?.cells.length ?? 0;
    this.#nextSeq = journal?.nextSeq ?? 1;
    if (journal === undefined) return;
    const count = journal.cells.length;
    for (const cell of journal.cells) {
      if (unsettled(cell, cell.cell === count))
        this.#written.set(cell.cell, { cell: cellRowText(cell, cell.status === 'running'), calls: new Map(cell.calls.map((c) => [c.seq, callRowText(c)])) });
    }
  }

  /** The write that brings the store up to `journal` (`open`: the cell running now), or undefined when nothing differs. */
  diff(journal: Journal, open: number | undefined): JournalAppend | undefined {
    const count = journal.cells.length;
    let truncateFrom: number | undefined = count < this.#storedCells ? count + 1 : undefined;
    // A cell that lost a row it had (a rollback of a resumed cell) is written again whole.
    for (const [n, written] of this.#written) {
      if (n > count) continue;
      const seqs = new Set(journal.cells[n - 1]!.calls.map((c) => c.seq));
      if ([...written.calls.keys()].some((seq) => !seqs.has(seq))) truncateFrom = Math.min(truncateFrom ?? n, n);
    }
    const candidates = new Set<number>();
    for (const n of this.#written.keys()) if (n <= count) candidates.add(n);
    for (let n = Math.min(this.#storedCells, count) + 1; n <= count; n++) candidates.add(n);
    if (truncateFrom !== undefined) for (let n = truncateFrom; n <= count; n++) candidates.add(n);
    const cells: CellRow[] = [];
    const calls: CallRow[] = [];
    for (const n of [...candidates].sort((a, b) => a - b)) {
      const cell = journal.cells[n - 1]!;
      const written = truncateFrom !== undefined && n >= truncateFrom ? undefined : this.#written.get(n);
      const text = cellRowText(cell, n === open || cell.status === 'running');
      if (written?.cell !== text) cells.push({ cell: n, record: text });
      for (const call of cell.calls) {
        const callText = callRowText(call);
        if (written?.calls.get(call.seq) !== callText) calls.push({ cell: n, seq: call.seq, record: callText });
      }
    }
    if (cells.length === 0 && calls.length === 0 && truncateFrom === undefined && journal.nextSeq === this.#nextSeq) return undefined;
    return { ...(truncateFrom === undefined ? {} : { truncateFrom }), cells, calls, nextSeq: journal.nextSeq };
  }

  /** The store confirmed `append`, made by {@link JournalRows.diff} of `journal`: it holds those rows now. */
  written(journal: Journal, append: JournalAppend): void {
    if (append.truncateFrom !== undefined) {
      for (const n of [...this.#written.keys()]) if (n >= append.truncateFrom) this.#written.delete(n);
      this.#storedCells = Math.min(this.#storedCells, append.truncateFrom - 1);
    }
    const entry = (n: number) => {
      let found = this.#written.get(n);
      if (found === undefined) {
        found = { cell: '', calls: new Map<number, string>() };
        this.#written.set(n, found);
      }
      return found;
    };
    for (const row of append.cells) {
      entry(row.cell).cell = row.record;
      this.#storedCells = Math.max(this.#storedCells, row.cell);
    }
    for (const row of append.calls) entry(row.cell).calls.set(row.seq, row.record);
    this.#nextSeq = append.nextSeq;
    const count = journal.cells.length;
    // Forget a cell that is settled and stored as it is now (it may have changed since the diff).
    for (const [n, written] of [...this.#written]) {
      const cell = journal.cells[n - 1];
      if (cell === undefined || unsettled(cell, n === count) || written.cell !== cellRowText(cell, false)) continue;
      if (cell.calls.every((call) => written.calls.get(call.seq) === callRowText(call))) this.#written.delete(n);
    }
  }
}

/**
 * What `load` answers, from a session's header row and its cell and call rows as a SQL store
 * reads them (columns named as Strata's tables name them: `format`, `settings`, `next_seq`,
 * `version`, `lease_owner`, `lease_token`, `lease_expires_at`, `created_at`, `updated_at`, times
 * in milliseconds; `cell`, `seq`, `record`).
 */
export function storedRowsOf(sessionId: string, session: DatabaseRow, cells: readonly DatabaseRow[], calls: readonly DatabaseRow[]): StoredRows {
  return {
    session: {
      sessionId,
      format: Number(session['format']),
      settings: String(session['settings']),
      nextSeq: Number(session['next_seq']),
      version: Number(session['version']),
      lease: {
        owner: session['lease_owner'] === null ? null : String(session['lease_owner']),
        token: Number(session['lease_token']),
        expiresAt: session['lease_expires_at'] === null ? null : Number(session['lease_expires_at']),
      },
      createdAt: Number(session['created_at']),
      updatedAt: Number(session['updated_at']),
    },
    cells: cells.map((row) => ({ cell: Number(row['cell']), record: String(row['record']) })),
    calls: calls.map((row) => ({ cell: Number(row['cell']), seq: Number(row['seq']), record: String(row['record']) })),
  };
}
