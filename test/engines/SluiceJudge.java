// Iceberg's Java library as the judge: every metadata file sluice wrote, of every table, parsed by
// TableMetadataParser, every snapshot's manifest list and every manifest read by ManifestFiles
// (each entry's sequence numbers, partition, metrics and bounds touched; bounds decoded by
// Conversions), and the point query planned by the library's own scan. In package
// org.apache.iceberg to reach ManifestReader.entries(), which lists DELETED entries too.
package org.apache.iceberg;

import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import java.io.File;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileInfo;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Types;
import org.apache.iceberg.util.JsonUtil;

public class SluiceJudge {
  /** sluice's metadata files: as staged (metadata/<N>-<version-8 uuid>) and the copies published for file-catalog readers (metadata/v<N>). */
  private static final Pattern VERSION = Pattern.compile("/metadata/(v\\d+|\\d{5,}-[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})\\.metadata\\.json$");

  public static void main(String[] args) throws Exception {
    run(args[0], args[1]);
  }

  /** Judges the tables of the engine input `in` (JSON); writes the verdicts to `out`. */
  public static void run(String in, String out) throws Exception {
    JsonNode spec = JsonUtil.mapper().readTree(new File(in));
    JsonNode s3 = spec.get("s3");
    Map<String, String> props = new HashMap<>();
    props.put("s3.endpoint", s3.get("endpoint").asText());
    props.put("s3.path-style-access", "true");
    props.put("client.region", s3.get("region").asText());
    props.put("s3.access-key-id", s3.get("accessKeyId").asText());
    props.put("s3.secret-access-key", s3.get("secretAccessKey").asText());
    S3FileIO io = new S3FileIO();
    io.initialize(props);
    Map<String, Object> tables = new HashMap<>();
    for (JsonNode table : spec.get("tables")) {
      Map<String, Object> result = new HashMap<>();
      tables.put(table.get("id").asText(), result);
      List<String> errors = new ArrayList<>();
      result.put("errors", errors);
      String current = table.get("metadata").asText();
      try {
        judge(io, current, result, errors);
        JsonNode point = table.get("point");
        if (point != null) result.put("planned", plan(io, current, point));
      } catch (Exception e) {
        errors.add(current + ": " + e);
      }
    }
    Map<String, Object> verdict = new HashMap<>();
    verdict.put("engine", "iceberg-java");
    verdict.put("version", "Iceberg " + IcebergBuild.version());
    verdict.put("tables", tables);
    JsonUtil.mapper().writeValue(new File(out), verdict);
    io.close();
  }

  static void judge(S3FileIO io, String current, Map<String, Object> result, List<String> errors) {
    String dir = current.substring(0, current.lastIndexOf("/metadata/") + "/metadata/".length());
    List<String> versions = new ArrayList<>();
    for (FileInfo info : io.listPrefix(dir)) if (VERSION.matcher(info.location()).find()) versions.add(info.location());
    if (!versions.contains(current)) errors.add(current + ": not listed under " + dir);
    int snapshots = 0, expired = 0, entries = 0;
    Set<String> lists = new HashSet<>(), manifests = new HashSet<>();
    for (String location : versions) {
      TableMetadata metadata;
      try {
        metadata = TableMetadataParser.read(io, location);
      } catch (Exception e) {
        errors.add(location + ": " + e);
        continue;
      }
      for (Snapshot snapshot : metadata.snapshots()) {
        snapshots++;
        String list = snapshot.manifestListLocation();
        // An older version may name snapshots a later expiry removed with their files.
        if (!location.equals(current) && !io.newInputFile(list).exists()) {
          expired++;
          continue;
        }
        if (!lists.add(list)) continue;
        try {
          for (ManifestFile manifest : snapshot.allManifests(io)) {
            if (!manifests.add(manifest.path())) continue;
            entries += readManifest(io, metadata, manifest, errors);
          }
        } catch (Exception e) {
          errors.add(location + " snapshot " + snapshot.snapshotId() + " (" + list + "): " + e);
        }
      }
    }
    result.put("metadata", versions.size());
    result.put("snapshots", snapshots);
    result.put("expiredSnapshots", expired);
    result.put("manifestLists", lists.size());
    result.put("manifests", manifests.size());
    result.put("entries", entries);
  }

  static int readManifest(S3FileIO io, TableMetadata metadata, ManifestFile manifest, List<String> errors) throws Exception {
    int n = 0;
    Map<Integer, PartitionSpec> specs = metadata.specsById();
    if (manifest.content() == ManifestContent.DATA) {
      try (ManifestReader<DataFile> reader = ManifestFiles.read(manifest, io, specs)) {
        for (ManifestEntry<DataFile> entry : reader.entries()) n += touch(metadata, manifest, entry, errors);
      }
    } else {
      try (ManifestReader<DeleteFile> reader = ManifestFiles.readDeleteManifest(manifest, io, specs)) {
        for (ManifestEntry<DeleteFile> entry : reader.entries()) n += touch(metadata, manifest, entry, errors);
      }
    }
    return n;
  }

  static <F extends ContentFile<F>> int touch(TableMetadata metadata, ManifestFile manifest, ManifestEntry<F> entry, List<String> errors) {
    F file = entry.file();
    String where = manifest.path() + " entry " + file.location();
    entry.status();
    entry.snapshotId();
    Long data = entry.dataSequenceNumber();
    Long fileSeq = entry.fileSequenceNumber();
    if (data == null || fileSeq == null) errors.add(where + ": no sequence number after inheritance (data " + data + ", file " + fileSeq + ")");
    file.partition();
    file.recordCount();
    file.fileSizeInBytes();
    file.columnSizes();
    file.valueCounts();
    file.nullValueCounts();
    file.nanValueCounts();
    List<Integer> equality = file.equalityFieldIds();
    if ((file.content() == FileContent.EQUALITY_DELETES) != (equality != null && !equality.isEmpty()))
      errors.add(where + ": content " + file.content() + " with equality_ids " + equality);
    decode(metadata, file.lowerBounds(), where + " lower bound", errors);
    decode(metadata, file.upperBounds(), where + " upper bound", errors);
    return 1;
  }

  static void decode(TableMetadata metadata, Map<Integer, ByteBuffer> bounds, String where, List<String> errors) {
    if (bounds == null) return;
    for (Map.Entry<Integer, ByteBuffer> bound : bounds.entrySet()) {
      Types.NestedField field = null;
      for (Schema schema : metadata.schemas()) if (schema.findField(bound.getKey()) != null) field = schema.findField(bound.getKey());
      // A position delete file's columns are the spec's reserved ones, in no table schema; Java's writer keeps their bounds too.
      for (Types.NestedField reserved : List.of(MetadataColumns.DELETE_FILE_PATH, MetadataColumns.DELETE_FILE_POS))
        if (field == null && reserved.fieldId() == bound.getKey()) field = reserved;
      if (field == null) {
        errors.add(where + " of field " + bound.getKey() + ": no schema has that field");
        continue;
      }
      try {
        Conversions.fromByteBuffer(field.type(), bound.getValue());
      } catch (Exception e) {
        errors.add(where + " of " + field.name() + ": " + e);
      }
    }
  }

  static Map<String, Object> plan(S3FileIO io, String current, JsonNode point) throws Exception {
    Table table = new BaseTable(new StaticTableOperations(current, io), current);
    int data = 0, deletes = 0;
    try (CloseableIterable<FileScanTask> tasks = table.newScan().filter(Expressions.equal(point.get("column").asText(), point.get("value").asLong())).planFiles()) {
      for (FileScanTask task : tasks) {
        data++;
        deletes += task.deletes().size();
      }
    }
    Map<String, Object> planned = new HashMap<>();
    planned.put("data", data);
    planned.put("deletes", deletes);
    Snapshot snapshot = table.currentSnapshot();
    planned.put("total", snapshot == null ? 0 : Integer.parseInt(snapshot.summary().getOrDefault("total-data-files", "0")));
    return planned;
  }
}
