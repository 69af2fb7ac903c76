import { fileNumber } from '../core/position.ts';

/**
 * The ordering key of a change event: a string that sorts lexicographically in capture order.
 *
 *   FFFFFFFFFF.PPPPPPPPPPPP.IIIIIIIIII
 *   binlog file number . end offset of the transaction's first event . change index in the transaction
 *
 * Transactions appear in the binlog in commit order and each starts at a distinct offset, so the
 * first two fields order transactions; the index orders changes inside one. Every field is
 * zero-padded to a fixed width so string order equals numeric order.
 */
export function seqPrefix(file: string, txnPos: number): string {
  return `${String(fileNumber(file)).padStart(10, '0')}.${String(txnPos).padStart(12, '0')}.`;
}

export function seq(prefix: string, index: number): string {
  return prefix + String(index).padStart(10, '0');
}
