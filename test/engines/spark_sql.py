"""Spark with Iceberg's Java runtime as a table's other writer: one session over the REST catalog,
kept for the whole test (a JVM start costs tens of seconds), reading SQL statements as JSON lines
on stdin and answering each with one JSON line on stdout: {"rows": [[text, ...], ...]} or
{"error": "..."}. The maintainer's procedures (CALL rest.system.rewrite_data_files, expire_snapshots)
and foreign writes go through it."""

import json
import sys

from canon import error_text
from spark_session import rest_catalog, session

spec = json.loads(sys.argv[1])
# Every commit sees the catalog as it is now (the default caches tables for 30 s).
catalog = {**rest_catalog(spec["uri"], spec["s3"]), ".cache-enabled": "false"}
spark = session("sluice-maintainer", spec["jars"], {"rest": catalog}, {"spark.sql.shuffle.partitions": "2"})
print(json.dumps({"ready": spark.version}), flush=True)
for line in sys.stdin:
    try:
        rows = spark.sql(json.loads(line)["sql"]).collect()
        answer = {"rows": [[None if v is None else str(v) for v in row] for row in rows]}
    except Exception as e:  # noqa: BLE001 - the engine's message is the answer
        answer = {"error": error_text(e)}
    print(json.dumps(answer), flush=True)
spark.stop()
