import type { PacketParser } from '@vlasky/zongji';

/**
 * A JSON or VECTOR column's value in a row image as the server logs it, like a BLOB's: its length
 * (`length_size` bytes, from the TABLE_MAP), then the bytes, handed over as they are. JSON is
 * printed by the reader (json.ts); VECTOR's float32s are its value, as a mysql2 query returns them.
 */
export function readStoredBytes(parser: PacketParser, column: { readonly metadata: Record<string, unknown> }): Buffer {
  return parser.parseBuffer(parser.parseUnsignedNumber(column.metadata.length_size as number));
}
