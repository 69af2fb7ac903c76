"""bench:iceberg's check of its largest first load (ICEBERG_SPARK=1): Apache Spark with Iceberg's Java
runtime registers the table by its metadata file (as read_spark.py does) and prints, as JSON, the
row count, the distinct keys, column sums and an order-free digest of every row — the sum of CRC32
over `id|name|amount|qty|created` — which bench/iceberg-load.ts compares with MariaDB's, computed
there by the same formula. Too many rows to compare cell by cell through Python; a changed, lost or
duplicated row changes the count or the digest."""

import json
import sys
import time

from spark_session import jdbc_catalog, session

with open(sys.argv[1]) as f:
    spec = json.load(f)
spark = session("sluice-bench-digest", spec["jars"], {"ice": jdbc_catalog(spec["scratch"], spec["s3"])}, {"spark.driver.memory": "2g"})
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
