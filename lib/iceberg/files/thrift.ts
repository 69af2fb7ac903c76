import { AssertionError } from '../../errors.ts';

/*
 * Thrift's compact protocol, generically: a struct decodes to its fields in wire order (id, type,
 * value) and encodes back to the same bytes, so a Parquet footer or page header can be edited field
 * by field without a schema — fields this code does not know about survive untouched.
 */

/** Compact-protocol type ids (booleans are normalized to `TRUE`, their value carried separately). */
export const T = { TRUE: 1, FALSE: 2, BYTE: 3, I16: 4, I32: 5, I64: 6, DOUBLE: 7, BINARY: 8, LIST: 9, SET: 10, MAP: 11, STRUCT: 12 } as const;

/** A decoded value: numbers as bigint (i8..i64), binary as bytes, containers as typed arrays of values. */
export type ThriftValue = boolean | bigint | number | Uint8Array | ThriftList | ThriftMap | ThriftStruct;
export interface ThriftList {
  readonly elementType: number;
  readonly items: ThriftValue[];
}
export interface ThriftMap {
  readonly keyType: number;
  readonly valueType: number;
  readonly entries: [ThriftValue, ThriftValue][];
}
export interface ThriftField {
  readonly id: number;
  type: number;
  value: ThriftValue;
}
/** A struct: its fields in the order they were read (or added). */
export type ThriftStruct = ThriftField[];

/** Decodes a struct at `offset`; returns it and the offset after its stop byte. */
export function decodeStruct(bytes: Uint8Array, offset = 0): { struct: ThriftStruct; end: number } {
  const reader = new Reader(bytes, offset);
  const struct = reader.struct();
  return { struct, end: reader.at };
}

/** The compact-protocol bytes of `struct`. */
export function encodeStruct(struct: ThriftStruct): Uint8Array {
  const writer = new Writer();
  writer.struct(struct);
  return writer.bytes();
}

/** The value of field `id`, or undefined. */
export function field(struct: ThriftStruct, id: number): ThriftValue | undefined {
  return struct.find((f) => f.id === id)?.value;
}

/** Sets field `id` (appending it if absent: compact encoding allows any field order). */
export function setField(struct: ThriftStruct, id: number, type: number, value: ThriftValue): void {
  const existing = struct.find((f) => f.id === id);
  if (existing) {
    existing.type = type;
    existing.value = value;
  } else struct.push({ id, type, value });
}

export function removeField(struct: ThriftStruct, id: number): void {
  const at = struct.findIndex((f) => f.id === id);
  if (at >= 0) struct.splice(at, 1);
}

class Reader {
  constructor(
    private readonly buf: Uint8Array,
    public at: number,
  ) {}

  private byte(): number {
    if (this.at >= this.buf.length) throw new AssertionError('Thrift data ends early');
    return this.buf[this.at++] as number;
  }

  private varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.byte();
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
      if (shift > 70n) throw new AssertionError('Thrift varint is too long');
    }
  }

  private zigzag(): bigint {
    const n = this.varint();
    return (n >> 1n) ^ -(n & 1n);
  }

  struct(): ThriftStruct {
    const fields: ThriftStruct = [];
    let last = 0;
    for (;;) {
      const header = this.byte();
      if (header === 0) return fields;
      const delta = header >> 4;
      const type = header & 0x0f;
      const id = delta ? last + delta : Number(this.zigzag());
      last = id;
      if (type === T.TRUE || type === T.FALSE) fields.push({ id, type: T.TRUE, value: type === T.TRUE });
      else fields.push({ id, type, value: this.value(type) });
    }
  }

  private value(type: number): ThriftValue {
    switch (type) {
      case T.TRUE:
      case T.FALSE:
        return this.byte() === T.TRUE;
      case T.BYTE: {
        const b = this.byte();
        return BigInt(b > 127 ? b - 256 : b);
      }
      case T.I16:
      case T.I32:
      case T.I64:
        return this.zigzag();
      case T.DOUBLE: {
        const view = new DataView(this.buf.buffer, this.buf.byteOffset + this.at, 8);
        this.at += 8;
        return view.getFloat64(0, true);
      }
      case T.BINARY: {
        const length = Number(this.varint());
        if (this.at + length > this.buf.length) throw new AssertionError('Thrift binary runs past the data');
        const out = this.buf.subarray(this.at, this.at + length);
        this.at += length;
        return out;
      }
      case T.LIST:
      case T.SET: {
        const header = this.byte();
        const size = header >> 4 === 15 ? Number(this.varint()) : header >> 4;
        const elementType = header & 0x0f;
        const items: ThriftValue[] = [];
        for (let i = 0; i < size; i++) items.push(this.value(elementType));
        return { elementType: elementType === T.FALSE ? T.TRUE : elementType, items };
      }
      case T.MAP: {
        const size = Number(this.varint());
        const types = size ? this.byte() : 0;
        const entries: [ThriftValue, ThriftValue][] = [];
        for (let i = 0; i < size; i++) entries.push([this.value(types >> 4), this.value(types & 0x0f)]);
        return { keyType: types >> 4, valueType: types & 0x0f, entries };
      }
      case T.STRUCT:
        return this.struct();
      default:
        throw new AssertionError(`Thrift type ${type} is not a compact-protocol type`);
    }
  }
}

class Writer {
  private readonly out: number[] = [];
  private readonly chunks: Uint8Array[] = [];

  bytes(): Uint8Array {
    this.flush();
    return Buffer.concat(this.chunks);
  }

  private flush() {
    if (this.out.length) this.chunks.push(Uint8Array.from(this.out));
    this.out.length = 0;
  }

  private varint(n: bigint) {
    let v = n;
    while (v >= 0x80n) {
      this.out.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.out.push(Number(v));
  }

  private zigzag(n: bigint) {
    this.varint(n >= 0n ? n << 1n : (-n << 1n) - 1n);
  }

  struct(struct: ThriftStruct) {
    let last = 0;
    for (const f of struct) {
      const type = f.type === T.TRUE || f.type === T.FALSE ? (f.value ? T.TRUE : T.FALSE) : f.type;
      const delta = f.id - last;
      if (delta > 0 && delta <= 15) this.out.push((delta << 4) | type);
      else {
        this.out.push(type);
        this.zigzag(BigInt(f.id));
      }
      last = f.id;
      if (f.type !== T.TRUE && f.type !== T.FALSE) this.value(f.type, f.value);
    }
    this.out.push(0);
  }

  private value(type: number, value: ThriftValue) {
    switch (type) {
      case T.TRUE:
      case T.FALSE:
        this.out.push(value ? T.TRUE : T.FALSE);
        return;
      case T.BYTE:
        this.out.push(Number(value) & 0xff);
        return;
      case T.I16:
      case T.I32:
      case T.I64:
        this.zigzag(BigInt(value as bigint | number));
        return;
      case T.DOUBLE: {
        const b = Buffer.alloc(8);
        b.writeDoubleLE(value as number);
        this.out.push(...b);
        return;
      }
      case T.BINARY: {
        const bytes = value as Uint8Array;
        this.varint(BigInt(bytes.length));
        this.flush();
        this.chunks.push(bytes);
        return;
      }
      case T.LIST:
      case T.SET: {
        const { elementType, items } = value as ThriftList;
        if (items.length < 15) this.out.push((items.length << 4) | elementType);
        else {
          this.out.push(0xf0 | elementType);
          this.varint(BigInt(items.length));
        }
        for (const item of items) this.value(elementType, item);
        return;
      }
      case T.MAP: {
        const { keyType, valueType, entries } = value as ThriftMap;
        this.varint(BigInt(entries.length));
        if (entries.length) this.out.push((keyType << 4) | valueType);
        for (const [k, v] of entries) {
          this.value(keyType, k);
          this.value(valueType, v);
        }
        return;
      }
      case T.STRUCT:
        this.struct(value as ThriftStruct);
        return;
      default:
        throw new AssertionError(`Thrift type ${type} is not a compact-protocol type`);
    }
  }
}
