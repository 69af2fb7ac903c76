"""The canonical text of an Iceberg value, the same for every engine (test/engines/canonical.ts is
its TypeScript twin for MariaDB's rows): ints and longs as integers, decimals as exact text at the
type's scale, float as the float32's shortest text, double as Python's repr, dates as ISO,
timestamps as ISO with microseconds (timestamptz in UTC, `+00:00`), binary as lowercase hex,
strings as they are, NULL as None."""

import datetime
import decimal
import json
import re
import struct
import sys

decimal.getcontext().prec = 100


def float32_text(x):
    for digits in range(1, 10):
        text = "%.*g" % (digits, x)
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == x:
            return repr(float(text))
    return repr(x)


def iso(v):
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}.{v.microsecond:06d}"


def canon(value, kind):
    if value is None:
        return None
    if kind in ("int", "long"):
        return str(int(value))
    scale = re.fullmatch(r"decimal\(\d+, *(\d+)\)", kind)
    if scale:
        return format(decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-int(scale.group(1)))), "f")
    if kind == "float":
        # Some engines print a float32 as its shortest text: back to the float32 it names.
        return float32_text(struct.unpack("<f", struct.pack("<f", float(value)))[0])
    if kind == "double":
        return repr(float(value))
    if kind == "date":
        return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    if kind == "timestamp":
        return iso(value)
    if kind == "timestamptz":
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc)
        return iso(value) + "+00:00"
    if kind == "binary":
        return bytes(value).hex()
    if kind == "boolean":
        return "true" if value else "false"
    return str(value)


def rows_of(records, columns):
    """Rows (sequences in column order) as lists of canonical texts."""
    return [[canon(r[i], c["type"]) for i, c in enumerate(columns)] for r in records]


def load():
    """The engine input (argv[1]) and a function that writes the engine output (argv[2])."""
    with open(sys.argv[1]) as f:
        spec = json.load(f)

    def write(out):
        with open(sys.argv[2], "w") as f:
            json.dump(out, f)

    return spec, write


def error_text(e):
    return f"{type(e).__name__}: {e}"[:3000]
