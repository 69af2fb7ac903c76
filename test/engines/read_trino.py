"""Trino (the server from Maven Central, on Java 25): started once, each table registered by its
metadata file (system.register_table) in the Iceberg connector's file metastore catalog
(`testing_file_metastore`: the only catalog Trino supports here without a Hive metastore, a Glue,
a REST service or a PostgreSQL for its JDBC catalog), read whole over Trino's HTTP protocol."""

import base64
import datetime
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

from canon import error_text, load, rows_of

spec, write = load()
s3 = spec["s3"]
home, scratch = spec["trino"]["home"], os.path.join(spec["scratch"], "trino")
etc = os.path.join(scratch, "etc")
os.makedirs(os.path.join(etc, "catalog"), exist_ok=True)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
files = {
    "node.properties": f"node.environment=test\nnode.id=sluice\nnode.data-dir={scratch}/data\nnode.internal-address=127.0.0.1\n",
    "jvm.config": "-server\n-Xmx2G\n-XX:+UseG1GC\n-Djdk.attach.allowAttachSelf=true\n-XX:+EnableDynamicAgentLoading\n",
    "config.properties": f"coordinator=true\nnode-scheduler.include-coordinator=true\nhttp-server.http.port={port}\ndiscovery.uri=http://127.0.0.1:{port}\n",
    "log.properties": "io.trino=WARN\n",
    "catalog/ice.properties": "\n".join(
        [
            "connector.name=iceberg",
            "iceberg.catalog.type=testing_file_metastore",
            "hive.metastore.catalog.dir=local:///",
            f"local.location={scratch}/metastore",
            "fs.native-local.enabled=true",
            "iceberg.register-table-procedure.enabled=true",
            "fs.native-s3.enabled=true",
            f"s3.endpoint={s3['endpoint']}",
            "s3.path-style-access=true",
            f"s3.region={s3['region']}",
            f"s3.aws-access-key={s3['accessKeyId']}",
            f"s3.aws-secret-key={s3['secretAccessKey']}",
        ]
    )
    + "\n",
}
for name, text in files.items():
    with open(os.path.join(etc, name), "w") as f:
        f.write(text)
os.makedirs(os.path.join(scratch, "metastore"), exist_ok=True)
env = dict(os.environ, JAVA_HOME=spec["trino"]["java"], PATH=f"{spec['trino']['java']}/bin:{os.environ['PATH']}")
log = open(os.path.join(scratch, "launcher.log"), "w")
server = subprocess.Popen([f"{home}/bin/launcher", "run", f"--etc-dir={etc}", f"--data-dir={scratch}/data"], env=env, stdout=log, stderr=log)


def request(url, data=None):
    headers = {"X-Trino-User": "sluice", "X-Trino-Catalog": "ice", "X-Trino-Client-Capabilities": "PARAMETRIC_DATETIME"}
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=300) as r:
        return json.load(r)


def query(sql):
    r = request(f"http://127.0.0.1:{port}/v1/statement", sql.encode())
    rows = []
    while True:
        if "error" in r:
            raise RuntimeError(r["error"]["message"])
        rows += r.get("data", [])
        if "nextUri" not in r:
            return rows
        r = request(r["nextUri"])


def value(v, kind):
    """Trino's JSON text of a value, as the Python value canon takes."""
    if v is None:
        return None
    if kind == "date":
        return datetime.date.fromisoformat(v)
    if kind == "timestamp":
        return datetime.datetime.fromisoformat(v)
    if kind == "timestamptz":
        return datetime.datetime.fromisoformat(v.removesuffix(" UTC")).replace(tzinfo=datetime.timezone.utc)
    if kind == "binary":
        return base64.b64decode(v)
    return v


out = {"engine": "trino", "version": "", "tables": {}}
try:
    # Ready means a query runs: /v1/info stops "starting" before the coordinator has registered itself
    # as a worker, and a query sent in between fails with "No nodes available to run query".
    deadline = time.time() + 300
    while True:
        try:
            info = request(f"http://127.0.0.1:{port}/v1/info")
            if not info["starting"]:
                query("SELECT 1")
                break
        except (OSError, RuntimeError) as e:
            last = error_text(e)
        else:
            last = "still starting"
        if server.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"Trino did not start ({last}); see {scratch}/launcher.log and {scratch}/data/var/log/server.log")
        time.sleep(1)
    out["version"] = f"Trino {info['nodeVersion']['version']}"
    query(f"CREATE SCHEMA ice.s WITH (location = 'local:///s')")
    for i, table in enumerate(spec["tables"]):
        try:
            location, name = table["metadata"].rsplit("/metadata/", 1)
            query(f"CALL ice.system.register_table(schema_name => 's', table_name => 't{i}', table_location => '{location}', metadata_file_name => '{name}')")
            columns = table["columns"]
            select = ", ".join('"' + c["name"].replace('"', '""') + '"' for c in columns)
            rows = [[value(v, c["type"]) for v, c in zip(r, columns)] for r in query(f"SELECT {select} FROM ice.s.t{i}")]
            out["tables"][table["id"]] = {"rows": rows_of(rows, columns)}
        except Exception as e:  # noqa: BLE001 - the engine's message is the result
            out["tables"][table["id"]] = {"error": error_text(e)}
except Exception as e:  # noqa: BLE001
    print(error_text(e), file=sys.stderr)
    sys.exit(1)
finally:
    server.terminate()
    server.wait(30)
write(out)
