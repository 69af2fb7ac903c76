/**
 * A row's key as the snapshot pages by it: one value per key column, in key order. Big integers are
 * exact strings (never doubles) and bytes are Buffers, so a cursor binds back into SQL exactly.
 */
export type KeyValues = readonly unknown[];

/** As JSON text, bytes as `{"$b64": …}`: how the state store keeps chunk bounds and cursors. */
export function encodeKeyValues(values: KeyValues | null): string | null {
  return values === null ? null : JSON.stringify(values.map((v) => (Buffer.isBuffer(v) ? { $b64: v.toString('base64') } : v)));
}

/** The inverse of encodeKeyValues; anything but a string (an absent attribute) is null. */
export function decodeKeyValues(text: unknown): KeyValues | null {
  if (typeof text !== 'string') return null;
  return (JSON.parse(text) as unknown[]).map((v) =>
    v && typeof v === 'object' && '$b64' in v ? Buffer.from(String((v as { $b64: string }).$b64), 'base64') : v,
  );
}

/** As plain JSON values (bytes as `{"$b64": …}`), for a snapshot manifest's `after` and `last`. */
export function plainKeyValues(values: KeyValues | null): unknown {
  return values ? JSON.parse(encodeKeyValues(values) ?? 'null') : null;
}
