package scalebench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.CombinedScanTask;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Metrics;
import org.apache.iceberg.RowDelta;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableScan;
import org.apache.iceberg.actions.BinPackRewriteFilePlanner;
import org.apache.iceberg.actions.FileRewritePlan;
import org.apache.iceberg.actions.RewriteDataFiles;
import org.apache.iceberg.actions.RewriteFileGroup;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Conversions;
import org.apache.iceberg.types.Types;

/**
 * Iceberg Java's side of the scale benchmark, called through py4j from bench/scale_java.py.
 *
 * <p>Timed work runs here, inside the JVM, so that no py4j round trip per task or per file is counted: planning
 * ({@code TableScan.planTasks}), compaction planning ({@code BinPackRewriteFilePlanner.plan}), and the heap the
 * planning used. It also registers table entries through Iceberg's own API where writing real files would take hours:
 * copies of a real table's data files (hard links, metrics copied) and position delete files written by pyarrow.
 */
public final class ScaleBench {
  private ScaleBench() {}

  /**
   * Plans {@code table} at {@code snapshotId} (-1: current) with {@code filter}; returns nanoseconds, tasks, data file
   * slices, distinct data files, the delete files attached (summed over slices) and the CPU nanoseconds the whole JVM
   * spent meanwhile (its planning threads, and what else ran: GC, JIT), comparable under load where wall time is not.
   */
  public static long[] planTasks(Table table, long snapshotId, Expression filter) throws IOException {
    long cpuStarted = processCpuNanos();
    long started = System.nanoTime();
    long tasks = 0;
    long slices = 0;
    long deletes = 0;
    java.util.HashSet<String> files = new java.util.HashSet<>();
    try (CloseableIterable<CombinedScanTask> planned = scan(table, snapshotId, filter).planTasks()) {
      for (CombinedScanTask task : planned) {
        tasks += 1;
        for (FileScanTask file : task.files()) {
          slices += 1;
          deletes += file.deletes().size();
          files.add(file.file().location());
        }
      }
    }
    long nanos = System.nanoTime() - started;
    return new long[] {nanos, tasks, slices, files.size(), deletes, processCpuNanos() - cpuStarted};
  }

  /** CPU nanoseconds this JVM process has used (all threads). */
  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  /**
   * {@link #planTasks} with the heap measured around it: heap in use after a full GC before planning, the sum of the
   * heap pools' peak use during planning (garbage not yet collected included) and the heap in use after a full GC
   * with the planned tasks still held. Returns nanoseconds, tasks, used before, peak, retained (bytes).
   */
  public static long[] planTasksHeap(Table table, long snapshotId, Expression filter) throws IOException {
    System.gc();
    long before = heapUsed();
    resetPeaks();
    long started = System.nanoTime();
    List<CombinedScanTask> held = new ArrayList<>();
    try (CloseableIterable<CombinedScanTask> planned = scan(table, snapshotId, filter).planTasks()) {
      for (CombinedScanTask task : planned) {
        held.add(task);
      }
    }
    long nanos = System.nanoTime() - started;
    long peak = peakHeap();
    System.gc();
    long retained = heapUsed();
    long tasks = held.size();
    held.clear();
    return new long[] {nanos, tasks, before, peak, retained};
  }

  private static TableScan scan(Table table, long snapshotId, Expression filter) {
    TableScan scan = table.newScan();
    if (snapshotId >= 0) {
      scan = scan.useSnapshot(snapshotId);
    }
    return filter == null ? scan : scan.filter(filter);
  }

  private static long heapUsed() {
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  private static void resetPeaks() {
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP) {
        pool.resetPeakUsage();
      }
    }
  }

  private static long peakHeap() {
    long total = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP) {
        total += pool.getPeakUsage().getUsed();
      }
    }
    return total;
  }

  /**
   * Java's bin-pack compaction planning ({@code rewrite_data_files}' planner) of the current snapshot with
   * {@code options}; returns nanoseconds, file groups, files and bytes in them.
   */
  public static long[] rewritePlan(Table table, Map<String, String> options) throws IOException {
    long started = System.nanoTime();
    BinPackRewriteFilePlanner planner = new BinPackRewriteFilePlanner(table);
    planner.init(options == null ? new HashMap<>() : options);
    FileRewritePlan<RewriteDataFiles.FileGroupInfo, FileScanTask, DataFile, RewriteFileGroup> plan =
        planner.plan();
    long groups = 0;
    long files = 0;
    long bytes = 0;
    try (CloseableIterable<RewriteFileGroup> planned = plan.groups()) {
      for (RewriteFileGroup group : planned) {
        groups += 1;
        files += group.inputFileNum();
        bytes += group.inputFilesSizeInBytes();
      }
    }
    return new long[] {System.nanoTime() - started, groups, files, bytes};
  }

  /**
   * Registers {@code copies} copies of every live data file of {@code source} at {@code snapshotId} in
   * {@code target}, in {@code commits} appends ({@code newAppend}: the target's manifest-merge settings apply). Each
   * copy is a hard link under {@code dataRoot}/cNNN/[partition/] named {@code xC-<name>}, registered with the
   * original's partition, metrics and split offsets. Files are ordered by partition, copy and path before they are
   * cut into commits, so a commit holds whole partitions where it can (as daily appends would). Returns the number of
   * files registered.
   */
  public static long appendCopies(
      Table source, long snapshotId, Table target, String dataRoot, int copies, int commits)
      throws IOException {
    Snapshot snapshot = source.snapshot(snapshotId);
    List<DataFile> originals = new ArrayList<>();
    for (ManifestFile manifest : snapshot.dataManifests(source.io())) {
      try (ManifestReader<DataFile> reader =
          ManifestFiles.read(manifest, source.io(), source.specs())) {
        for (DataFile file : reader) {
          originals.add(file.copy());
        }
      }
    }
    List<Object[]> ordered = new ArrayList<>();
    for (int copy = 0; copy < copies; copy += 1) {
      for (DataFile file : originals) {
        String partition = source.specs().get(file.specId()).partitionToPath(file.partition());
        ordered.add(new Object[] {partition, copy, file});
      }
    }
    ordered.sort(
        Comparator.comparing((Object[] row) -> (String) row[0])
            .thenComparing(row -> (Integer) row[1])
            .thenComparing(row -> ((DataFile) row[2]).location()));
    long total = ordered.size();
    long registered = 0;
    for (int commit = 0; commit < commits; commit += 1) {
      int from = (int) (total * commit / commits);
      int to = (int) (total * (commit + 1) / commits);
      if (from == to) {
        continue;
      }
      AppendFiles append = target.newAppend();
      for (Object[] row : ordered.subList(from, to)) {
        String partition = (String) row[0];
        int copy = (Integer) row[1];
        DataFile file = (DataFile) row[2];
        String name = Paths.get(localPath(file.location())).getFileName().toString();
        String directory = String.format("%s/c%03d%s", dataRoot, commit, partition.isEmpty() ? "" : "/" + partition);
        String location = directory + "/x" + copy + "-" + name;
        link(localPath(file.location()), localPath(location));
        append.appendFile(DataFiles.builder(target.spec()).copy(file).withPath(location).build());
        registered += 1;
      }
      append.commit();
    }
    return registered;
  }

  /**
   * Appends one data file per commit, {@code count} times: a hard link of {@code template} (a live data file of the
   * table, its metrics copied) under {@code dataRoot}/appends/. Builds a table with a long snapshot history.
   */
  public static long appendSnapshots(Table table, String templatePath, String dataRoot, int count)
      throws IOException {
    DataFile template = null;
    for (ManifestFile manifest : table.currentSnapshot().dataManifests(table.io())) {
      try (ManifestReader<DataFile> reader = ManifestFiles.read(manifest, table.io(), table.specs())) {
        for (DataFile file : reader) {
          if (file.location().equals(templatePath)) {
            template = file.copy();
            break;
          }
        }
      }
      if (template != null) {
        break;
      }
    }
    if (template == null) {
      throw new IllegalArgumentException("not a live data file of " + table.name() + ": " + templatePath);
    }
    for (int index = 0; index < count; index += 1) {
      String location = String.format("%s/appends/a%05d.parquet", dataRoot, index);
      link(localPath(template.location()), localPath(location));
      table.newAppend().appendFile(DataFiles.builder(table.spec()).copy(template).withPath(location).build()).commit();
    }
    return count;
  }

  /**
   * Registers position delete files listed in {@code tsvPath} in one row-delta commit. Each line: delete file path,
   * size in bytes, record count, referenced data file, lowest and highest position, partition path ("" when
   * unpartitioned). The metrics are those Iceberg's writer keeps for a file-scoped position delete file (bounds of
   * file_path and pos). Returns the number of files registered.
   */
  public static long registerPositionDeletes(Table table, String tsvPath) throws IOException {
    int pathId = MetadataColumns.DELETE_FILE_PATH.fieldId();
    int posId = MetadataColumns.DELETE_FILE_POS.fieldId();
    RowDelta delta = table.newRowDelta();
    long registered = 0;
    for (String line : Files.readAllLines(Paths.get(tsvPath), StandardCharsets.UTF_8)) {
      if (line.isEmpty()) {
        continue;
      }
      String[] fields = line.split("\t", -1);
      long records = Long.parseLong(fields[2]);
      Map<Integer, Long> counts = Map.of(pathId, records, posId, records);
      Map<Integer, Long> nulls = Map.of(pathId, 0L, posId, 0L);
      Metrics metrics =
          new Metrics(
              records,
              null,
              counts,
              nulls,
              null,
              Map.of(
                  pathId, Conversions.toByteBuffer(Types.StringType.get(), fields[3]),
                  posId, Conversions.toByteBuffer(Types.LongType.get(), Long.parseLong(fields[4]))),
              Map.of(
                  pathId, Conversions.toByteBuffer(Types.StringType.get(), fields[3]),
                  posId, Conversions.toByteBuffer(Types.LongType.get(), Long.parseLong(fields[5]))));
      FileMetadata.Builder builder =
          FileMetadata.deleteFileBuilder(table.spec())
              .ofPositionDeletes()
              .withPath(fields[0])
              .withFormat(FileFormat.PARQUET)
              .withFileSizeInBytes(Long.parseLong(fields[1]))
              .withRecordCount(records)
              .withMetrics(metrics)
              .withReferencedDataFile(fields[3]);
      if (!fields[6].isEmpty()) {
        builder = builder.withPartitionPath(fields[6]);
      }
      DeleteFile file = builder.build();
      delta.addDeletes(file);
      registered += 1;
    }
    delta.commit();
    return registered;
  }

  private static String localPath(String location) {
    if (location.startsWith("file://")) {
      return location.substring("file://".length());
    }
    return location.startsWith("file:") ? location.substring("file:".length()) : location;
  }

  private static void link(String existing, String created) throws IOException {
    Path target = Paths.get(created);
    Files.createDirectories(target.getParent());
    if (!Files.exists(target)) {
      Files.createLink(target, Paths.get(existing));
    }
  }
}
