"""Apache Spark with Iceberg's Java runtime, the reference: every table registered by its metadata
file (CALL system.register_table) into a JDBC catalog on SQLite, with S3FileIO on the emulator: no
Hadoop S3 filesystem (hadoop-aws) is needed, which the Hadoop catalog would; Iceberg's in-memory
catalog ignores io-impl. Each table read whole by SELECT. Then, in the same JVM, the judge
(SluiceJudge.java) loads every metadata file, manifest list and manifest with Iceberg's library."""

import os
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()
# Everything on the loopback: the driver would bind the host's first interface address otherwise.
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"

from canon import error_text, load, rows_of  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

spec, write = load()
s3 = spec["s3"]
builder = (
    SparkSession.builder.master("local[2]")
    .appName("sluice-engines")
    .config("spark.driver.extraClassPath", ":".join(spec["jars"]))
    .config("spark.ui.enabled", "false")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
)
catalog = {
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
}
for key, value in catalog.items():
    builder = builder.config(f"spark.sql.catalog.ice{key}", value)
# REST mode: tables with a "rest" name are read through an Iceberg REST catalog, as registered there by sluice.
rest = spec.get("rest")
if rest:
    for key, value in {**catalog, ".catalog-impl": None, ".uri": rest["uri"], ".type": "rest", ".warehouse": None}.items():
        if value is not None:
            builder = builder.config(f"spark.sql.catalog.rest{key}", value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.t")
iceberg = spark._jvm.org.apache.iceberg.IcebergBuild.version()
out = {"engine": "spark", "version": f"Spark {spark.version} + Iceberg {iceberg}", "tables": {}}
for i, table in enumerate(spec["tables"]):
    try:
        named = table.get("rest")
        if named:
            source = f"rest.`{named['namespace']}`.`{named['name']}`"
        else:
            spark.sql(f"CALL ice.system.register_table(table => 't.t{i}', metadata_file => '{table['metadata']}')")
            source = f"ice.t.t{i}"
        columns = table["columns"]
        select = ", ".join("`" + c["name"].replace("`", "``") + "`" for c in columns)
        result = out["tables"][table["id"]] = {"rows": rows_of(spark.sql(f"SELECT {select} FROM {source}").collect(), columns)}
        point = table.get("point")
        if point:
            where = f"`{point['column']}` = {int(point['value'])}"
            result["point"] = rows_of(spark.sql(f"SELECT {select} FROM {source} WHERE {where}").collect(), columns)
    except Exception as e:  # noqa: BLE001 - the engine's message is the result
        out["tables"][table["id"]] = {"error": error_text(e)}
write(out)
try:
    spark._jvm.org.apache.iceberg.SluiceJudge.run(sys.argv[1], spec["judgeOutput"])
    spark.stop()
except Exception as e:  # noqa: BLE001 - the suite shows this message
    print(f"the judge (SluiceJudge.java) failed: {error_text(e)}", file=sys.stderr)
    sys.exit(1)
