"""PyIceberg: each table a StaticTable from its metadata file (or loaded through the REST catalog the
input names), read whole by scan().to_arrow(); the point query's files counted by plan_files(). PyIceberg cannot apply equality deletes
(apache/iceberg-python #1210): a table whose snapshot holds any is skipped, and the reason given."""

from canon import error_text, load, rows_of
from pyiceberg import __version__
from pyiceberg.expressions import EqualTo
from pyiceberg.manifest import DataFileContent, ManifestEntryStatus
from pyiceberg.catalog import load_catalog
from pyiceberg.table import StaticTable

spec, write = load()
s3 = spec["s3"]
properties = {
    "s3.endpoint": s3["endpoint"],
    "s3.region": s3["region"],
    "s3.access-key-id": s3["accessKeyId"],
    "s3.secret-access-key": s3["secretAccessKey"],
    "s3.force-virtual-addressing": "false",
}
# REST mode: tables with a "rest" name are loaded through an Iceberg REST catalog.
rest = load_catalog("rest", **{"type": "rest", "uri": spec["rest"]["uri"], **properties}) if spec.get("rest") else None
out = {"engine": "pyiceberg", "version": f"PyIceberg {__version__}", "tables": {}}
for table in spec["tables"]:
    result = out["tables"][table["id"]] = {}
    try:
        named = table.get("rest")
        if named and rest:
            static = rest.load_table((named["namespace"], named["name"]))
        else:
            static = StaticTable.from_metadata(table["metadata"], properties=properties)
        snapshot = static.current_snapshot()
        equality = 0
        if snapshot:
            for manifest in snapshot.manifests(static.io):
                for entry in manifest.fetch_manifest_entry(static.io, discard_deleted=True):
                    equality += entry.status != ManifestEntryStatus.DELETED and entry.data_file.content == DataFileContent.EQUALITY_DELETES
        if equality:
            result["skipped"] = f"{equality} equality delete file(s): PyIceberg cannot apply equality deletes (apache/iceberg-python #1210)"
            continue
        columns = table["columns"]
        arrow = static.scan(selected_fields=tuple(c["name"] for c in columns)).to_arrow()
        names = [c["name"] for c in columns]
        result["rows"] = rows_of([[r[n] for n in names] for r in arrow.to_pylist()], columns)
        point = table.get("point")
        if point:
            tasks = list(static.scan(row_filter=EqualTo(point["column"], point["value"])).plan_files())
            result["planned"] = {"data": len(tasks), "deletes": sum(len(t.delete_files) for t in tasks)}
    except Exception as e:  # noqa: BLE001 - the engine's message is the result
        result["error"] = error_text(e)
write(out)
