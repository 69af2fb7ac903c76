import { createHash } from 'node:crypto';
import { type BinlogPosition, fileNumber } from '../core/position.ts';

/*
 * `seq`, the ordering key of the format (docs/FORMAT.md, "Ordering"): a string, unique per event,
 * whose lexicographic order is capture order. Every form of it is built here and nowhere else.
 *
 *   every form may be led by the history epoch `hEEEEEE.` (below); epoch 0 writes none
 *
 *   binlog event   FFFFFFFFFF.PPPPPPPPPPPP.IIIIIIIIII
 *                  file number . end offset of the transaction's first event . change index
 *   snapshot row   FFFFFFFFFF.PPPPPPPPPPPP.r.<job>.<table hash:8>.<chunk:4>.<page:8>.<row:7>
 *                  F.P of the page's low watermark L (the binlog end read before its SELECT)
 *   run control    FFFFFFFFFF.PPPPPPPPPPPP.i<commit:12>.<index:10>
 *                  F.P of the stored position a run starts from: what a run decides before reading
 *                  (tables entering or leaving the filters, the schema versions a source starts
 *                  with), numbered by the commit that records it
 *   sentinel       FFFFFFFFFF.PPPPPPPPPPPP.~   (verify: "after every event at or before S")
 *
 * Why this orders correctly:
 *   - Transactions are written to the binlog whole, in commit order, each at its own offset, so
 *     (F, P) orders transactions and I orders changes inside one.
 *   - Every numeric field is zero-padded to a fixed width, so string order is numeric order.
 *   - A watermark L is a transaction boundary, and a settled one: every transaction before it has
 *     committed in the engine when the page is read (dialect.ts `settledEnd`), so the page sees
 *     them. A transaction before L has its first event ending at or before P(L) in F(L) (or in an
 *     earlier file); one after L has it ending after P(L). So no binlog event has the prefix F(L).P(L).: binlog events before L sort below
 *     the page's rows, events after L above them, and "greatest seq per key wins" merges both.
 *   - A run's start position is a transaction boundary too, so no binlog event has its prefix
 *     either; the commit number keeps two runs starting at one position apart.
 *   - After the shared prefix, a binlog index starts with a digit, a run control event with `i`, a
 *     snapshot row with `r` and the sentinel with `~`; digits < `i` < `r` < `~` in ASCII, so a reset
 *     written by a run sorts before the rows of a snapshot page read at that position, and the
 *     sentinel after every snapshot row read at that position and before every event of a later
 *     transaction.
 *
 * The history epoch. (F, P) order events only within one binlog history: RESET MASTER, a restore,
 * a failover or a Blue/Green switch starts numbering again or differently. The source's state
 * counts its histories (`SourceState.epoch`): every write that puts the stored position anywhere
 * but where reading forward left it (`sluice state reset`, `state import`, an automatic
 * reposition after a failover) advances the epoch in the same conditional write. Events and
 * snapshot rows carry the epoch that was stored when they were read, and a seq of epoch E > 0
 * starts with `hEEEEEE.` — `h` sorts after every digit, so epoch 1 sorts after everything written
 * before epochs existed (epoch 0, no prefix: output written by earlier versions stays as it is and
 * in order), and the six zero-padded digits order the epochs after it. So every event written
 * after a change of history sorts after every event written before it, whatever its file number
 * and offset; inside one epoch the argument above holds, because a run reads one history only (the
 * history checks in lib/source/mysql/history.ts stop it before anything else) and a snapshot page
 * is kept only when its watermark is not before the stored position of the epoch it is tagged with
 * (lib/snapshot/worker.ts).
 */

const FILE_WIDTH = 10;
const POS_WIDTH = 12;
const INDEX_WIDTH = 10;
const CHUNK_WIDTH = 4;
const PAGE_WIDTH = 8;
/** Digits of a snapshot row's index within its page (`snapshotSeq`), zero-padded. */
export const SNAPSHOT_ROW_WIDTH = 7;

const EPOCH_WIDTH = 6;

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** What leads every seq of history epoch `epoch`: nothing for 0, `hEEEEEE.` after it. */
export function epochPart(epoch: number): string {
  if (!Number.isInteger(epoch) || epoch < 0 || epoch >= 10 ** EPOCH_WIDTH) throw new RangeError(`history epoch ${epoch} is out of range`);
  return epoch === 0 ? '' : `h${pad(epoch, EPOCH_WIDTH)}.`;
}

/** The last epoch and file `seqPrefix` was asked about and its `[hE.]F.`: a capture asks per transaction, nearly always of one file. */
let lastEpoch = 0;
let lastFile = '';
let lastFilePart = '';

/** `[hE.]F.P.` of a binlog position in history epoch `epoch`: of a transaction's first event, or of a snapshot page's watermark. */
export function seqPrefix(epoch: number, file: string, pos: number): string {
  if (file !== lastFile || epoch !== lastEpoch) {
    lastFilePart = `${epochPart(epoch)}${pad(fileNumber(file), FILE_WIDTH)}.`;
    lastFile = file;
    lastEpoch = epoch;
  }
  return `${lastFilePart}${pad(pos, POS_WIDTH)}.`;
}

/** A binlog event's seq: its transaction's prefix and its change index within the transaction. */
export function seq(prefix: string, index: number): string {
  return prefix + pad(index, INDEX_WIDTH);
}

/** The prefix of what a run records at its start position, in the commit numbered `commitSeq`. */
export function runControlPrefix(epoch: number, position: BinlogPosition, commitSeq: number): string {
  return `${seqPrefix(epoch, position.file, position.pos)}i${pad(commitSeq, POS_WIDTH)}.`;
}

/** A short, stable tag for a table name, so two tables' rows in one snapshot never share a seq. */
function tableHash(table: string): string {
  return createHash('sha1').update(table).digest('hex').slice(0, 8);
}

/** The prefix of one snapshot page's rows: the watermark's `F.P.`, then `r.<job>.<table hash>.<chunk>.<page>.`. */
export function snapshotPagePrefix(epoch: number, watermark: BinlogPosition, job: string, table: string, chunk: number, page: number): string {
  return `${seqPrefix(epoch, watermark.file, watermark.pos)}r.${job}.${tableHash(table)}.${pad(chunk, CHUNK_WIDTH)}.${pad(page, PAGE_WIDTH)}.`;
}

/** A snapshot row's seq: its page's prefix and its index within the page. */
export function snapshotSeq(pagePrefix: string, row: number): string {
  return pagePrefix + pad(row, SNAPSHOT_ROW_WIDTH);
}

/**
 * Greater than the seq of every event committed at or before `position` and of every snapshot row
 * read at that watermark; smaller than the seq of every transaction that begins after it.
 */
export function seqAfter(epoch: number, position: BinlogPosition): string {
  return `${seqPrefix(epoch, position.file, position.pos)}~`;
}
