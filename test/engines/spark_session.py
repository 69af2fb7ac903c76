"""A local Spark session with Iceberg's Java runtime as the engines tests and bench:iceberg start it:
two local cores, loopback only (the driver would bind the host's first interface address otherwise),
UTC, no UI, Iceberg's SQL extensions, and the Iceberg catalogs the caller names, each with S3FileIO
on the S3 emulator (no Hadoop S3 filesystem is needed)."""

import os
import time

os.environ["TZ"] = "UTC"
time.tzset()
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"

from pyspark.sql import SparkSession  # noqa: E402


def s3_io(s3):
    """The catalog properties for S3FileIO on the emulator."""
    return {
        ".io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        ".s3.endpoint": s3["endpoint"],
        ".s3.path-style-access": "true",
        ".client.region": s3["region"],
        ".s3.access-key-id": s3["accessKeyId"],
        ".s3.secret-access-key": s3["secretAccessKey"],
    }


def jdbc_catalog(scratch, s3):
    """A JDBC catalog on SQLite in `scratch`, where tables are registered by their metadata file."""
    return {
        ".catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog",
        ".uri": f"jdbc:sqlite:{scratch}/catalog.db",
        ".jdbc.schema-version": "V1",
        ".warehouse": f"{scratch}/warehouse",
        **s3_io(s3),
    }


def rest_catalog(uri, s3):
    """An Iceberg REST catalog at `uri`."""
    return {".type": "rest", ".uri": uri, **s3_io(s3)}


def session(app, jars, catalogs, settings=None):
    """The session; `catalogs` maps a catalog name to its properties, `settings` adds Spark settings."""
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.driver.extraClassPath", ":".join(jars))
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
    )
    for key, value in (settings or {}).items():
        builder = builder.config(key, value)
    for name, properties in catalogs.items():
        for key, value in {"": "org.apache.iceberg.spark.SparkCatalog", **properties}.items():
            builder = builder.config(f"spark.sql.catalog.{name}{key}", value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
