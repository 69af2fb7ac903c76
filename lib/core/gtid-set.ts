import { ConfigError } from '../errors.ts';

/*
 * MySQL GTID sets as immutable values (MariaDB's `d-s-n` positions are another shape: GtidPosition
 * below).
 *
 * A set lists, per source, the transactions executed: `3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:11-18,
 * 2C256447-3F0D-431B-9A25-BDDF1F1F6EF6:1-27`; since MySQL 8.3 a transaction may carry a tag, which
 * makes `(uuid, tag)` its own source: `uuid:1-5:mytag:1-2` (the manual, "GTID Format and Storage":
 * tags are up to 32 letters, digits and underscores, not starting with a digit, compared
 * case-insensitively, printed lowercase). MySQL prints sets with the sources sorted and ",\n"
 * between them; `toString` writes the same text without the newlines, so a set read from
 * `@@gtid_executed` and one built from the binlog's events compare equal as text.
 *
 * Intervals are inclusive BigInt pairs, sorted and coalesced: GNOs run to 2^63-1.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TAG = /^[a-z_][a-z0-9_]{0,31}$/;
const GNO = /^[1-9]\d{0,18}$/;
const MAX_GNO = (1n << 63n) - 1n;

type Interval = readonly [start: bigint, end: bigint];

/** A GTID's source: `uuid` or `uuid:tag`, lowercase. */
type Source = string;

function gno(text: string, whole: string): bigint {
  const value = GNO.test(text) ? BigInt(text) : 0n;
  if (value < 1n || value > MAX_GNO) throw new ConfigError(`"${whole}" is not a MySQL GTID set: "${text}" is not a transaction number (1 to 2^63-1)`);
  return value;
}

/** Sorts and merges touching or overlapping intervals. */
function coalesce(intervals: Interval[]): Interval[] {
  intervals.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: [bigint, bigint][] = [];
  for (const [start, end] of intervals) {
    const last = out[out.length - 1];
    if (last && start <= last[1] + 1n) {
      if (end > last[1]) last[1] = end;
    } else out.push([start, end]);
  }
  return out;
}

/** `a` minus `b`, both coalesced. */
function minus(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  for (const [start, end] of a) {
    let from = start;
    for (const [s, e] of b) {
      if (e < from || s > end) continue;
      if (s > from) out.push([from, s - 1n]);
      from = e + 1n;
      if (from > end) break;
    }
    if (from <= end) out.push([from, end]);
  }
  return out;
}

/** `a` ∩ `b`, both coalesced. */
function both(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  for (const [start, end] of a)
    for (const [s, e] of b) {
      // BigInts: Math.max/min would throw.
      const lo = [s, start].sort((x, y) => (x < y ? 1 : -1))[0] as bigint;
      const hi = [e, end].sort((x, y) => (x < y ? -1 : 1))[0] as bigint;
      if (lo <= hi) out.push([lo, hi]);
    }
  return coalesce(out);
}

/** One GTID `uuid:n` or `uuid:tag:n` as its source and number. */
export function parseGtid(text: string): { source: Source; gno: bigint } {
  const parts = text.trim().toLowerCase().split(':');
  const [uuid, second, third] = parts;
  const tagged = parts.length === 3;
  if (!uuid || !UUID.test(uuid) || parts.length < 2 || parts.length > 3 || (tagged && !TAG.test(second ?? '')))
    throw new ConfigError(`"${text}" is not a MySQL GTID (expected uuid:number or uuid:tag:number)`);
  return { source: tagged ? `${uuid}:${second}` : uuid, gno: gno((tagged ? third : second) ?? '', text) };
}

/** A set of MySQL GTIDs: parse, serialize, compare, contains, add. Immutable. */
export class GtidSet {
  static readonly EMPTY = new GtidSet(new Map());

  private constructor(private readonly sources: ReadonlyMap<Source, readonly Interval[]>) {}

  /**
   * Parses `@@gtid_executed`, Previous_gtids or `SLUICE_STARTUP=gtid:` text: '' (empty),
   * `uuid:1-5:11-18,uuid2:1-3`, `uuid:1-5:tag:1-2` (whitespace and newlines tolerated).
   */
  static parse(text: string): GtidSet {
    const sources = new Map<Source, Interval[]>();
    const trimmed = text.replace(/\s+/g, '');
    if (!trimmed) return GtidSet.EMPTY;
    for (const entry of trimmed.toLowerCase().split(',')) {
      const [uuid, ...items] = entry.split(':');
      if (!uuid || !UUID.test(uuid) || !items.length)
        throw new ConfigError(
          `"${text}" is not a MySQL GTID set: "${entry}" is not uuid:interval[:interval...] (e.g. 3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5)`,
        );
      let source: Source = uuid;
      let pending = false; // a tag names the intervals after it: one without any is malformed
      for (const item of items) {
        if (TAG.test(item)) {
          if (pending) throw new ConfigError(`"${text}" is not a MySQL GTID set: tag "${source.split(':')[1]}" has no transactions`);
          source = `${uuid}:${item}`;
          pending = true;
          continue;
        }
        const [from, to, extra] = item.split('-');
        const start = gno(from ?? '', text);
        const end = to === undefined ? start : gno(to, text);
        if (extra !== undefined || end < start) throw new ConfigError(`"${text}" is not a MySQL GTID set: "${item}" is not an interval n or n-m with n ≤ m`);
        sources.set(source, [...(sources.get(source) ?? []), [start, end]]);
        pending = false;
      }
      if (pending) throw new ConfigError(`"${text}" is not a MySQL GTID set: tag "${source.split(':')[1]}" has no transactions`);
    }
    return new GtidSet(new Map([...sources].map(([s, list]) => [s, coalesce(list)])));
  }

  /** Whether `text` is a MySQL GTID set (or one GTID); '' is not, being no set of either flavor. */
  static is(text: string): boolean {
    if (!text.trim()) return false;
    try {
      GtidSet.parse(text);
      return true;
    } catch {
      return false;
    }
  }

  get isEmpty(): boolean {
    return this.sources.size === 0;
  }

  /** Whether the one transaction `uuid:n` / `uuid:tag:n` is in the set. */
  contains(gtid: string): boolean {
    const { source, gno } = parseGtid(gtid);
    return (this.sources.get(source) ?? []).some(([s, e]) => gno >= s && gno <= e);
  }

  /** Whether every transaction of `other` is in this set (other ⊆ this). */
  includes(other: GtidSet): boolean {
    return other.subtract(this).isEmpty;
  }

  /** The set with one more transaction. */
  add(gtid: string): GtidSet {
    const { source, gno } = parseGtid(gtid);
    const list = this.sources.get(source) ?? [];
    if (list.some(([s, e]) => gno >= s && gno <= e)) return this;
    const sources = new Map(this.sources);
    sources.set(source, coalesce([...list, [gno, gno]]));
    return new GtidSet(sources);
  }

  union(other: GtidSet): GtidSet {
    const sources = new Map(this.sources);
    for (const [source, list] of other.sources) sources.set(source, coalesce([...(sources.get(source) ?? []), ...list]));
    return new GtidSet(sources);
  }

  /** The transactions of this set that `other` lacks. */
  subtract(other: GtidSet): GtidSet {
    const sources = new Map<Source, readonly Interval[]>();
    for (const [source, list] of this.sources) {
      const rest = minus(list, other.sources.get(source) ?? []);
      if (rest.length) sources.set(source, rest);
    }
    return new GtidSet(sources);
  }

  /** The transactions in both sets. */
  intersect(other: GtidSet): GtidSet {
    const sources = new Map<Source, readonly Interval[]>();
    for (const [source, list] of this.sources) {
      const common = both(list, other.sources.get(source) ?? []);
      if (common.length) sources.set(source, common);
    }
    return new GtidSet(sources);
  }

  equals(other: GtidSet): boolean {
    return this.toString() === other.toString();
  }

  /**
   * Sets are partially ordered by inclusion: -1 when this ⊂ other (an earlier point of one
   * history), 0 when equal, 1 when this ⊃ other, undefined when neither holds the other.
   */
  compare(other: GtidSet): -1 | 0 | 1 | undefined {
    const here = this.includes(other);
    const there = other.includes(this);
    if (here && there) return 0;
    if (there) return -1;
    if (here) return 1;
    return undefined;
  }

  /** MySQL's text (without its newlines): uuids sorted, each one's untagged intervals first, then its tags sorted. */
  toString(): string {
    const byUuid = new Map<string, [tag: string, text: string][]>();
    for (const [source, list] of this.sources) {
      const [uuid = '', tag = ''] = source.split(':');
      const text = list.map(([s, e]) => (s === e ? `${s}` : `${s}-${e}`)).join(':');
      byUuid.set(uuid, [...(byUuid.get(uuid) ?? []), [tag, text]]);
    }
    return [...byUuid]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(
        ([uuid, tags]) =>
          `${uuid}${tags
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
            .map(([tag, text]) => (tag ? `:${tag}:${text}` : `:${text}`))
            .join('')}`,
      )
      .join(',');
  }
}

/** Whether `text` is a MariaDB GTID position: `d-s-n` per domain, comma-separated. */
export function isMariadbGtidPosition(text: string): boolean {
  return /^\d+-\d+-\d+(,\d+-\d+-\d+)*$/.test(text);
}

/** One MariaDB GTID `domain-server-sequence`, as its parts and its text. */
export interface MariadbGtid {
  readonly domain: number;
  readonly server: number;
  readonly seq: bigint;
  readonly text: string;
}

const MARIADB_GTID = /^(\d{1,10})-(\d{1,10})-(\d{1,20})$/;

/** A MariaDB GTID `d-s-n` as its parts; undefined for other shapes (a MySQL `uuid:n`, nothing). */
export function parseMariadbGtid(text: string | null | undefined): MariadbGtid | undefined {
  const match = MARIADB_GTID.exec((text ?? '').trim());
  if (!match?.[1] || !match[2] || !match[3]) return undefined;
  const [domain, server, seq] = [Number(match[1]), Number(match[2]), BigInt(match[3])];
  return { domain, server, seq, text: `${domain}-${server}-${seq}` };
}

/**
 * A MariaDB GTID position: per replication domain, the last transaction (`d-s-n`), as
 * @@gtid_binlog_pos and BINLOG_GTID_POS write it. Within a domain the binlog order is total, so one
 * GTID stands for everything of its domain logged before it; a MariaDB replica resumes from such a
 * position (its `gtid_slave_pos`) by skipping each listed domain's transactions up to and including
 * its GTID. There are no intervals as in MySQL's sets, and sequence numbers alone do not order a
 * domain's transactions (a replica's own writes, another server's after a failover). Immutable.
 */
export class GtidPosition {
  static readonly EMPTY = new GtidPosition(new Map());

  private constructor(private readonly domains: ReadonlyMap<number, MariadbGtid>) {}

  /** Parses '' or `d-s-n[,d-s-n…]` (whitespace tolerated); a domain named twice is refused, as the server refuses it. */
  static parse(text: string): GtidPosition {
    const domains = new Map<number, MariadbGtid>();
    for (const part of text.split(',')) {
      if (!part.trim()) continue;
      const gtid = parseMariadbGtid(part);
      if (!gtid) throw new ConfigError(`"${text}" is not a MariaDB GTID position: "${part.trim()}" is not domain-server-sequence (e.g. 0-1-1234)`);
      if (domains.has(gtid.domain)) throw new ConfigError(`"${text}" is not a MariaDB GTID position: it names domain ${gtid.domain} twice`);
      domains.set(gtid.domain, gtid);
    }
    return domains.size ? new GtidPosition(domains) : GtidPosition.EMPTY;
  }

  /**
   * The position a binlog state implies (a Gtid_list event, @@gtid_binlog_state): its entries,
   * one per domain and server, list each domain's latest last, so the last entry of a domain wins.
   */
  static ofState(gtids: Iterable<string>): GtidPosition {
    let position = GtidPosition.EMPTY;
    for (const text of gtids) {
      const gtid = parseMariadbGtid(text);
      if (gtid) position = position.with(gtid);
    }
    return position;
  }

  get isEmpty(): boolean {
    return this.domains.size === 0;
  }

  /** The domain's last transaction in this position. */
  get(domain: number): MariadbGtid | undefined {
    return this.domains.get(domain);
  }

  /** Whether `gtid` is, exactly, its domain's last transaction here. */
  holds(gtid: MariadbGtid): boolean {
    return this.domains.get(gtid.domain)?.text === gtid.text;
  }

  /** Every domain's last transaction, by domain. */
  gtids(): MariadbGtid[] {
    return [...this.domains.values()].sort((a, b) => a.domain - b.domain);
  }

  /** The position with `gtid` as its domain's last transaction. */
  with(gtid: MariadbGtid): GtidPosition {
    if (this.holds(gtid)) return this;
    const domains = new Map(this.domains);
    domains.set(gtid.domain, gtid);
    return new GtidPosition(domains);
  }

  /** The position without `domain`. */
  without(domain: number): GtidPosition {
    if (!this.domains.has(domain)) return this;
    const domains = new Map(this.domains);
    domains.delete(domain);
    return domains.size ? new GtidPosition(domains) : GtidPosition.EMPTY;
  }

  /** `d-s-n,…` by domain, as the server writes it. */
  toString(): string {
    return this.gtids()
      .map((g) => g.text)
      .join(',');
  }
}
