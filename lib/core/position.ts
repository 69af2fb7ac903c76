import { ConfigError } from '../errors.ts';

/**
 * A binlog position at a transaction boundary: resuming from it replays nothing and skips nothing.
 * `gtid` is the last transaction committed at that point (MariaDB `d-s-n` or a MySQL `uuid:n`),
 * kept as an opaque string because the two servers' shapes differ.
 */
export interface BinlogPosition {
  readonly file: string;
  readonly pos: number;
  readonly gtid?: string;
  /**
   * MySQL: every transaction executed at this point (the GTID set `@@gtid_executed` had when it
   * was written), when the stream knows it: from the Previous_gtids of a file it read from the
   * start, or the stored position's set, plus each GTID since. The foreign-history and purge
   * checks compare it with the server's (lib/source/mysql/history.ts); absent with gtid_mode OFF.
   */
  readonly gtidSet?: string;
  /**
   * MariaDB: every domain's last transaction read at this point (`d-s-n,…`, as @@gtid_binlog_pos
   * writes it), when the stream knows it: from the stored position's, a file's Gtid_list, or
   * BINLOG_GTID_POS at the run's start, plus each GTID since. What a server must hold for the
   * position to be resumed there by GTID (lib/source/mysql/history.ts); absent on positions stored
   * before it was recorded.
   */
  readonly gtidPos?: string;
  /**
   * MariaDB, after a move by GTID to a server that logged the domains' transactions in another
   * order: the domains whose last transaction read (in `gtidPos`) lies after this point in this
   * server's binlog, each with that GTID. The stream skips a listed domain's transactions up to
   * and including its GTID, as a MariaDB replica does; absent when there is none.
   */
  readonly gtidSkip?: string;
  /**
   * When the transaction `gtid` was written (ms since the epoch, second precision): its GTID event's
   * timestamp, which a replica logs as the primary did. With `gtid` it identifies the transaction
   * across servers, where a GTID alone does not (sequence numbers restart after RESET MASTER).
   */
  readonly gtidTime?: number;
  /**
   * MySQL: when the transaction `gtid` was first committed (µs since the epoch): its GTID event's
   * original_commit_timestamp, which every replica logs unchanged. Where `gtidTime` may match by
   * chance (two transactions of one GTID in one second), this does not.
   */
  readonly gtidCommitUs?: number;
}

const fileNumbers = new Map<string, number>();

/** The numeric suffix of a binlog file name (`binlog.000042` → 42); memoized, it is asked per transaction. */
export function fileNumber(file: string): number {
  const known = fileNumbers.get(file);
  if (known !== undefined) return known;
  const match = /\.(\d+)$/.exec(file);
  if (!match?.[1]) throw new ConfigError(`binlog file name "${file}" has no numeric suffix (expected e.g. binlog.000042)`);
  const n = Number(match[1]);
  if (fileNumbers.size > 10_000) fileNumbers.clear();
  fileNumbers.set(file, n);
  return n;
}

/**
 * What a binlog event header's 32-bit `log_pos` (the event's end offset) wraps at. A file grows past
 * `max_binlog_size` by a whole transaction (the size is checked between transactions), so one large
 * enough transaction takes it past 4 GiB; servers then write the end offset modulo 2^32.
 */
export const LOG_POS_MODULUS = 2 ** 32;

/**
 * The offset whose low 32 bits are `logPos`, at or after `after` and less than 2^32 past it: the
 * true end of an event whose header says `logPos`, when the event before it (or the position a
 * stream started from) ended at `after`. Exact as long as the two ends lie less than 4 GiB apart,
 * which consecutive events of a stream always do (an event is at most 1 GiB).
 */
export function unwrapLogPos(logPos: number, after: number): number {
  return after + ((((logPos - after) % LOG_POS_MODULUS) + LOG_POS_MODULUS) % LOG_POS_MODULUS);
}

/** Orders positions: by file number, then by offset. */
export function comparePositions(a: BinlogPosition, b: BinlogPosition): number {
  return fileNumber(a.file) - fileNumber(b.file) || a.pos - b.pos;
}

/** A position in the source's numbered binlog history (its epoch, lib/format/seq.ts). */
export interface EpochPosition {
  readonly epoch: number;
  readonly position: BinlogPosition;
}

/** Orders positions across changes of history: by epoch, then within one history by file and offset. */
export function compareEpochPositions(a: EpochPosition, b: EpochPosition): number {
  return a.epoch - b.epoch || comparePositions(a.position, b.position);
}

export function formatPosition(p: BinlogPosition): string {
  return `${p.file}:${p.pos}${p.gtid ? ` (gtid ${p.gtid})` : ''}`;
}

/** Parses `<file>:<pos>`, as in `SLUICE_STARTUP=position:binlog.000003:1234`. */
export function parsePosition(text: string): BinlogPosition {
  const match = /^([^:\s]+\.\d+):(\d+)$/.exec(text);
  if (!match?.[1] || !match[2]) throw new ConfigError(`"${text}" is not a binlog position; expected <file>:<pos>, e.g. binlog.000003:1234`);
  return { file: match[1], pos: Number(match[2]) };
}
