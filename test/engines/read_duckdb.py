"""DuckDB's iceberg extension (the PyPI wheels of the same DuckDB version, loaded from disk: nothing is
downloaded at run time): each table by iceberg_scan of its metadata file, over an S3 secret for the
emulator."""

import glob
import os
from urllib.parse import urlparse

import duckdb
from canon import error_text, load, rows_of

spec, write = load()
s3 = spec["s3"]
con = duckdb.connect(config={"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"})
site = os.path.dirname(os.path.dirname(duckdb.__file__))
for name in ("httpfs", "avro", "iceberg"):
    (path,) = glob.glob(f"{site}/duckdb_extension_{name}/extensions/*/{name}.duckdb_extension")
    con.load_extension(path)
con.execute("SET TimeZone = 'UTC'")
endpoint = urlparse(s3["endpoint"])
con.execute(
    "CREATE SECRET emulator (TYPE s3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL ?)",
    [s3["accessKeyId"], s3["secretAccessKey"], s3["region"], endpoint.netloc, endpoint.scheme == "https"],
)
version = con.execute("SELECT extension_version FROM duckdb_extensions() WHERE extension_name = 'iceberg'").fetchone()[0]
out = {"engine": "duckdb", "version": f"DuckDB {duckdb.__version__} + iceberg {version}", "tables": {}}
for table in spec["tables"]:
    try:
        columns = table["columns"]
        select = ", ".join('"' + c["name"].replace('"', '""') + '"' for c in columns)
        metadata = table["metadata"].replace("'", "''")
        out["tables"][table["id"]] = {"rows": rows_of(con.execute(f"SELECT {select} FROM iceberg_scan('{metadata}')").fetchall(), columns)}
    except Exception as e:  # noqa: BLE001 - the engine's message is the result
        out["tables"][table["id"]] = {"error": error_text(e)}
write(out)
