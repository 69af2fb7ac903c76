import { GtidPosition, GtidSet } from '../../../core/gtid-set.ts';
import type { BinlogPosition } from '../../../core/position.ts';

/*
 * What the server had executed at the stream's point, as positions carry it: MySQL's GTID set,
 * MariaDB's last transaction per domain, and the MariaDB domains still to be moved past. A group's
 * GTID joins them at the group's end (`fold`), so a position names exactly what precedes it.
 */

/** A set with its text; unknown (undefined) when the server's text does not parse: positions then go without one. */
function knownSet(make: () => GtidSet | undefined): { set: GtidSet; text: string } | undefined {
  try {
    const set = make();
    return set && { set, text: set.toString() };
  } catch {
    return undefined;
  }
}

export class ExecutedGtids {
  /**
   * MySQL: the GTID set executed at the stream's point, once known (the stored position's, or a
   * file's Previous_gtids), with its text for positions; the open group's GTID joins it at the
   * group's end.
   */
  private executed: { set: GtidSet; text: string } | undefined;
  private pendingGtid: string | undefined;
  /**
   * MariaDB: every domain's last transaction at the stream's point, once known (the stored
   * position's, or a file's Gtid_list); the open group's GTID joins it at the group's end.
   */
  private domains: Map<number, string> | undefined;
  /** `domains` as a position's text, made when a boundary needs it after a change (a plain Map and one string: this runs per transaction). */
  private domainsText: string | undefined;
  private pendingDomainGtid: { domain: number; text: string } | undefined;
  /**
   * MariaDB: the domains whose last transaction read lies further on in this binlog (a position
   * moved by GTID to a server that logged the domains in another order): their transactions are
   * moved past without being emitted up to and including that GTID, as a replica skips them.
   */
  private skipTo: GtidPosition = GtidPosition.EMPTY;

  /** `purged`: the server's gtid_purged when the stream opened (MySQL; see BinlogReaderOptions). */
  constructor(
    start: BinlogPosition,
    private readonly purged: string | undefined,
  ) {
    if (start.gtidSet !== undefined) this.executed = { set: GtidSet.parse(start.gtidSet), text: start.gtidSet };
    if (start.gtidPos) this.setDomains(GtidPosition.parse(start.gtidPos));
    if (start.gtidSkip) this.skipTo = GtidPosition.parse(start.gtidSkip);
  }

  /** The ended (or superseded) group's GTID joins the executed set (MySQL), or becomes its domain's last (MariaDB). */
  fold(): void {
    const domainGtid = this.pendingDomainGtid;
    if (domainGtid) {
      this.pendingDomainGtid = undefined;
      if (this.domains && this.domains.get(domainGtid.domain) !== domainGtid.text) {
        this.domains.set(domainGtid.domain, domainGtid.text);
        this.domainsText = undefined;
      }
    }
    if (this.pendingGtid === undefined) return;
    if (this.executed) this.executed = knownSet(() => this.executed?.set.add(this.pendingGtid as string));
    this.pendingGtid = undefined;
  }

  /** MySQL: the open group's GTID, to join the set at its end. */
  opened(gtid: string | undefined): void {
    this.pendingGtid = gtid;
  }

  /** MariaDB: the open group's GTID, to become its domain's last at its end. */
  openedInDomain(domain: number, text: string): void {
    this.pendingDomainGtid = { domain, text };
  }

  /** Whether a MySQL GTID is in the set executed at the stream's point (false while that set is unknown). */
  holds(gtid: unknown): boolean {
    if (typeof gtid !== 'string' || !this.executed) return false;
    try {
      return this.executed.set.contains(gtid);
    } catch {
      return false;
    }
  }

  /** MariaDB: whether the domain's group `text` is moved past (its domain still skipped up to a GTID); the domain is through at that GTID. */
  skips(domain: number, text: string): boolean {
    const until = this.skipTo.isEmpty ? undefined : this.skipTo.get(domain);
    if (!until) return false;
    if (until.text === text) this.skipTo = this.skipTo.without(domain);
    return true;
  }

  /**
   * A MariaDB Gtid_list read at a file's start: the state before it, exact from here on. The
   * domains still skipped keep the GTID read on the other server, which this one logs further on.
   */
  stateBeforeFile(gtids: readonly string[]): void {
    let position = GtidPosition.ofState(gtids);
    for (const gtid of this.skipTo.gtids()) position = position.with(gtid);
    this.setDomains(position);
  }

  /**
   * A MySQL Previous_gtids: the set executed before its file, exact from here on. United with the
   * set known so far: a start set's gap-filled transactions after it stay held. With the server's
   * gtid_purged, which the event leaves out when SET gtid_purged put it there.
   */
  executedBeforeFile(text: string): void {
    this.executed = knownSet(() =>
      GtidSet.parse(text)
        .union(this.executed?.set ?? GtidSet.EMPTY)
        .union(GtidSet.parse(this.purged ?? '')),
    );
  }

  /** What a position carries of them, when known. */
  fields(): Pick<BinlogPosition, 'gtidSet' | 'gtidPos' | 'gtidSkip'> {
    return {
      ...(this.executed?.text ? { gtidSet: this.executed.text } : {}),
      ...(this.domains?.size ? { gtidPos: this.gtidPos() } : {}),
      ...(this.skipTo.isEmpty ? {} : { gtidSkip: this.skipTo.toString() }),
    };
  }

  private setDomains(position: GtidPosition): void {
    this.domains = new Map(position.gtids().map((g) => [g.domain, g.text]));
    this.domainsText = undefined;
  }

  /** Every domain's last GTID as a position's text (by domain), when known. */
  private gtidPos(): string | undefined {
    const domains = this.domains;
    if (!domains?.size) return undefined;
    this.domainsText ??=
      domains.size === 1
        ? (domains.values().next().value as string)
        : [...domains]
            .sort(([a], [b]) => a - b)
            .map(([, text]) => text)
            .join(',');
    return this.domainsText;
  }
}
