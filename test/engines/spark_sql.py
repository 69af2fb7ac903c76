"""Spark with Iceberg's Java runtime as a table's other writer: one session over the REST catalog,
kept for the whole test (a JVM start costs tens of seconds), reading SQL statements as JSON lines
on stdin and answering each with one JSON line on stdout: {"rows": [[text, ...], ...]} or
{"error": "..."}. The maintainer's procedures (CALL rest.system.rewrite_data_files, expire_snapshots)
and foreign writes go through it."""

import json
import os
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"

from canon import error_text  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

spec = json.loads(sys.argv[1])
s3 = spec["s3"]
builder = (
    SparkSession.builder.master("local[2]")
    .appName("sluice-maintainer")
    .config("spark.driver.extraClassPath", ":".join(spec["jars"]))
    .config("spark.ui.enabled", "false")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
)
for key, value in {
    "": "org.apache.iceberg.spark.SparkCatalog",
    ".type": "rest",
    ".uri": spec["uri"],
    ".io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
    ".s3.endpoint": s3["endpoint"],
    ".s3.path-style-access": "true",
    ".client.region": s3["region"],
    ".s3.access-key-id": s3["accessKeyId"],
    ".s3.secret-access-key": s3["secretAccessKey"],
    # Every commit sees the catalog as it is now (the default caches tables for 30 s).
    ".cache-enabled": "false",
}.items():
    builder = builder.config(f"spark.sql.catalog.rest{key}", value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
print(json.dumps({"ready": spark.version}), flush=True)
for line in sys.stdin:
    try:
        rows = spark.sql(json.loads(line)["sql"]).collect()
        answer = {"rows": [[None if v is None else str(v) for v in row] for row in rows]}
    except Exception as e:  # noqa: BLE001 - the engine's message is the answer
        answer = {"error": error_text(e)}
    print(json.dumps(answer), flush=True)
spark.stop()
