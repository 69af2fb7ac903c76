import type { Gtid, GtidInterval, GtidSource } from './binlog-file.ts';

/**
 * A MySQL GTID set: sources keyed by uuid and tag, each a sorted list of disjoint inclusive
 * intervals. Prints as the server prints `@@gtid_executed` (sql/rpl_gtid_set.cc
 * `Gtid_set::to_string`: `uuid:1-5:11` per uuid, tags after the untagged intervals as
 * `uuid:1-13:mytag:1-2`, uuids joined by `,\n`).
 *
 * Deliberately not lib/core/gtid-set.ts: the replay source is the referee of what sluice does with
 * GTID sets (gtid_executed, the dump's skipping), so it must not share sluice's code for them.
 */
export class GtidSet {
  private readonly sources = new Map<string, GtidSource>();

  constructor(sources: readonly GtidSource[] = []) {
    for (const s of sources) for (const i of s.intervals) this.addInterval(s.uuid, s.tag, i.start, i.end);
  }

  /** Parses `uuid:1-5:tag:3,uuid2:7` (whitespace and newlines tolerated). */
  static parse(text: string): GtidSet {
    const set = new GtidSet();
    for (const entry of text
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean)) {
      const [uuid, ...items] = entry.split(':').map((p) => p.trim());
      let tag = '';
      for (const item of items) {
        const range = /^(\d+)(?:-(\d+))?$/.exec(item);
        if (!range) {
          tag = item.toLowerCase();
          continue;
        }
        set.addInterval((uuid as string).toLowerCase(), tag, BigInt(range[1] as string), BigInt(range[2] ?? (range[1] as string)));
      }
    }
    return set;
  }

  add(gtid: Gtid): void {
    this.addInterval(gtid.uuid, gtid.tag, gtid.gno, gtid.gno);
  }

  addSet(other: GtidSet): void {
    for (const s of other.list()) for (const i of s.intervals) this.addInterval(s.uuid, s.tag, i.start, i.end);
  }

  contains(gtid: Gtid): boolean {
    const source = this.sources.get(`${gtid.uuid}:${gtid.tag}`);
    return source?.intervals.some((i) => i.start <= gtid.gno && gtid.gno <= i.end) ?? false;
  }

  /** Whether every GTID of this set is in `other`. */
  isSubsetOf(other: GtidSet): boolean {
    return this.list().every((s) =>
      s.intervals.every((i) => {
        const theirs = other.sources.get(`${s.uuid}:${s.tag}`)?.intervals ?? [];
        return theirs.some((t) => t.start <= i.start && i.end <= t.end);
      }),
    );
  }

  /** The GTIDs of this set that are not in `other`. */
  minus(other: GtidSet): GtidSet {
    const out = new GtidSet();
    for (const s of this.list()) {
      for (const i of s.intervals) {
        let pieces: GtidInterval[] = [{ ...i }];
        for (const t of other.sources.get(`${s.uuid}:${s.tag}`)?.intervals ?? []) {
          pieces = pieces.flatMap((p) => {
            if (t.end < p.start || t.start > p.end) return [p];
            const kept: GtidInterval[] = [];
            if (t.start > p.start) kept.push({ start: p.start, end: t.start - 1n });
            if (t.end < p.end) kept.push({ start: t.end + 1n, end: p.end });
            return kept;
          });
        }
        for (const p of pieces) out.addInterval(s.uuid, s.tag, p.start, p.end);
      }
    }
    return out;
  }

  isEmpty(): boolean {
    return this.sources.size === 0;
  }

  /** The sources, sorted by uuid, untagged before tags, tags alphabetically (the wire and text order). */
  list(): GtidSource[] {
    return [...this.sources.values()].sort((a, b) => (a.uuid === b.uuid ? (a.tag < b.tag ? -1 : 1) : a.uuid < b.uuid ? -1 : 1));
  }

  toString(): string {
    const blocks: string[] = [];
    let last = '';
    for (const s of this.list()) {
      const ranges = s.intervals.map((i) => (i.start === i.end ? `${i.start}` : `${i.start}-${i.end}`)).join(':');
      const item = s.tag ? `${s.tag}:${ranges}` : ranges;
      if (s.uuid === last) blocks[blocks.length - 1] += `:${item}`;
      else blocks.push(`${s.uuid}:${item}`);
      last = s.uuid;
    }
    return blocks.join(',\n');
  }

  private addInterval(uuid: string, tag: string, start: bigint, end: bigint): void {
    const key = `${uuid}:${tag}`;
    const source = this.sources.get(key) ?? { uuid, tag, intervals: [] };
    const all = [...source.intervals, { start, end }].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
    const merged: GtidInterval[] = [];
    for (const i of all) {
      const prev = merged[merged.length - 1];
      if (prev && i.start <= prev.end + 1n) {
        if (i.end > prev.end) prev.end = i.end;
      } else merged.push({ ...i });
    }
    this.sources.set(key, { uuid, tag, intervals: merged });
  }
}
