import type { BinlogItem } from './items.ts';

/*
 * The reader's items between the connection, which decodes them as its packets arrive, and the
 * consumer, which takes them in order: memory back-pressure (the connection pauses when too many
 * rows wait), the wake-up of a waiting consumer, and the stream's failure, which ends it.
 */

/** What the queue asks of the connection when rows pile up or drain. */
export interface FlowControl {
  pause(): void;
  resume(): void;
}

export class ItemQueue {
  private readonly items: BinlogItem[] = [];
  private head = 0;
  private queuedRows = 0;
  private peakQueuedRows = 0;
  private pauses = 0;
  private paused = false;
  private wake: (() => void) | undefined;
  /** When (epoch ms) the consumer wants an `idle` item at the latest if nothing arrives (see wakeWithin). */
  private wakeBy: number | undefined;
  /** The stream's first failure: the consumer gets it instead of any further item. */
  private error: Error | Promise<Error> | undefined;

  /** `highWater`: pause the connection when this many rows wait unconsumed. */
  constructor(
    private readonly highWater: number,
    private readonly flow: FlowControl,
  ) {}

  push(item: BinlogItem, rows = 0): void {
    this.items.push(item);
    this.queuedRows += rows;
    if (this.queuedRows > this.peakQueuedRows) this.peakQueuedRows = this.queuedRows;
    if (!this.paused && this.queuedRows >= this.highWater) {
      this.paused = true;
      this.pauses++;
      this.flow.pause();
    }
    // Once: the other events of this socket read find the waiting iterator already woken.
    const wake = this.wake;
    if (wake) {
      this.wake = undefined;
      wake();
    }
  }

  /** The first queued item, left in the queue; undefined when none waits. */
  peek(): BinlogItem | undefined {
    return this.head < this.items.length ? this.items[this.head] : undefined;
  }

  /** Takes the first queued item (undefined when none waits); resumes the connection once few rows wait. */
  shift(): BinlogItem | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head] as BinlogItem;
    this.items[this.head++] = undefined as unknown as BinlogItem;
    if (this.head > 4096) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
    if (item.kind === 'rows') this.queuedRows -= item.rows.length;
    if (this.paused && this.queuedRows < this.highWater / 4) {
      this.paused = false;
      this.flow.resume();
    }
    return item;
  }

  /** The stream failed: the first failure is kept (what follows is its echo), and a waiting consumer woken. */
  fail(error: Error | Promise<Error>): void {
    this.error ??= error;
    this.wakeUp();
  }

  get failure(): Error | Promise<Error> | undefined {
    return this.error;
  }

  /** Wakes a waiting consumer (the stream failed or stopped). */
  wakeUp(): void {
    this.wake?.();
  }

  /**
   * Waits for an item, `idleMs` at most (less when `wakeWithin` asked for sooner); true when the
   * time ran out first.
   */
  async idle(idleMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const ms = Math.min(idleMs, this.wakeBy === undefined ? Number.POSITIVE_INFINITY : Math.max(0, this.wakeBy - Date.now()));
    const idle = await new Promise<boolean>((resolve) => {
      this.wake = () => resolve(false);
      timer = setTimeout(() => resolve(true), ms);
    });
    clearTimeout(timer);
    this.wake = undefined;
    if (idle) this.wakeBy = undefined;
    return idle;
  }

  /** Asks for an idle wake-up within `ms` if nothing arrives before (once). */
  wakeWithin(ms: number): void {
    const at = Date.now() + ms;
    this.wakeBy = this.wakeBy === undefined ? at : Math.min(this.wakeBy, at);
  }

  get backPressure(): { readonly queuedRows: number; readonly peakQueuedRows: number; readonly pauses: number } {
    return { queuedRows: this.queuedRows, peakQueuedRows: this.peakQueuedRows, pauses: this.pauses };
  }

  /** True when no item waits. */
  get drained(): boolean {
    return this.head >= this.items.length;
  }
}
