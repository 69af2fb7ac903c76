"""Apache Spark with Iceberg's Java runtime, the reference: every table registered by its metadata
file (CALL system.register_table) into a JDBC catalog on SQLite, with S3FileIO on the emulator: no
Hadoop S3 filesystem (hadoop-aws) is needed, which the Hadoop catalog would; Iceberg's in-memory
catalog ignores io-impl. Each table read whole by SELECT. Then, in the same JVM, the judge
(SluiceJudge.java) loads every metadata file, manifest list and manifest with Iceberg's library."""

import sys

from canon import error_text, load, rows_of
from spark_session import jdbc_catalog, rest_catalog, session

spec, write = load()
s3 = spec["s3"]
catalogs = {"ice": jdbc_catalog(spec["scratch"], s3)}
# REST mode: tables with a "rest" name are read through an Iceberg REST catalog, as registered there by sluice.
rest = spec.get("rest")
if rest:
    catalogs["rest"] = rest_catalog(rest["uri"], s3)
spark = session("sluice-engines", spec["jars"], catalogs)
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
