"""bench:iceberg's check of its largest first load (ICEBERG_SPARK=1): Apache Spark with Iceberg's Java
runtime registers the table by its metadata file (as read_spark.py does) and prints, as JSON, the
row count, the distinct keys, column sums and an order-free digest of every row — the sum of CRC32
over `id|name|amount|qty|created` — which bench/iceberg-load.ts compares with MariaDB's, computed
there by the same formula. Too many rows to compare cell by cell through Python; a changed, lost or
duplicated row changes the count or the digest."""

import json
import os
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"

from pyspark.sql import SparkSession  # noqa: E402

with open(sys.argv[1]) as f:
    spec = json.load(f)
s3 = spec["s3"]
builder = (
    SparkSession.builder.master("local[2]")
    .appName("sluice-bench-digest")
    .config("spark.driver.extraClassPath", ":".join(spec["jars"]))
    .config("spark.driver.memory", "2g")
    .config("spark.ui.enabled", "false")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
)
for key, value in {
    "": "org.apache.iceberg.spark.SparkCatalog",
    ".catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
    ".uri": f"jdbc:sqlite:{spec['scratch']}/catalog.db",
    ".jdbc.schema-version": "V1",
    ".warehouse": f"{spec['scratch']}/warehouse",
    ".io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
    ".s3.endpoint": s3["endpoint"],
    ".s3.path-style-access": "true",
    ".client.region": s3["region"],
    ".s3.access-key-id": s3["accessKeyId"],
    ".s3.secret-access-key": s3["secretAccessKey"],
}.items():
    builder = builder.config(f"spark.sql.catalog.ice{key}", value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
began = time.monotonic()
spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.b")
spark.sql(f"CALL ice.system.register_table(table => 'b.t', metadata_file => '{spec['metadata']}')")
files = spark.sql("SELECT COUNT(*) AS n FROM ice.b.t.files").collect()[0]["n"]
row = spark.sql(
    """SELECT COUNT(*) AS rows, COUNT(DISTINCT id) AS ids, SUM(id) AS id_sum, SUM(qty) AS qty_sum,
         CAST(SUM(amount) AS STRING) AS amount_sum,
         SUM(crc32(CAST(concat_ws('|', CAST(id AS STRING), name, CAST(amount AS STRING), CAST(qty AS STRING),
                                  date_format(created, 'yyyy-MM-dd HH:mm:ss')) AS BINARY))) AS digest
       FROM ice.b.t"""
).collect()[0]
out = {key: str(row[key]) for key in ("rows", "ids", "id_sum", "qty_sum", "amount_sum", "digest")}
out["files"] = str(files)
out["seconds"] = round(time.monotonic() - began, 1)
out["version"] = f"Spark {spark.version} + Iceberg {spark._jvm.org.apache.iceberg.IcebergBuild.version()}"
print(json.dumps(out))
spark.stop()
