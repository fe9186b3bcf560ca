package acidstore.jvm;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DecimalColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DoubleColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.StructColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.TimestampColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.StripeInformation;
import org.apache.orc.TypeDescription;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * Reads a task's event files with ORC-Java: only the row struct's requested children, plus
 * the key columns when the file has deleted rows or ROW__ID is asked for. Deleted rows are
 * found by walking the file's sorted delete keys beside its rows (both are in ROW__ID order)
 * and removed by compacting the batch's vectors in place, so Spark sees dense batches.
 */
final class AcidBatchReader implements PartitionReader<ColumnarBatch> {
  static final int BATCH = 4096;
  private static final int OP = 0, WRITE_ID = 1, BUCKET = 2, ROW_ID = 3, ROW = 5;
  private static final Configuration CONF = new Configuration();
  private static FileSystem localFs;

  private static final int ROW__ID = -1, PARTITION = -2;

  private final Plan.FileTask[] files;
  /** the stripe ranges left to read of a file whose other stripes were skipped */
  private final ArrayDeque<Plan.FileTask> runs = new ArrayDeque<>();
  private final StripeSkipping skipping;
  private final StructType required;
  /** per output column: the row struct child it reads, ROW__ID, or PARTITION - p for the
   *  p-th partition column */
  private final int[] childOf;
  private final boolean withRowId;
  private int next;
  private Reader reader;
  private RecordReader rows;
  private VectorizedRowBatch batch;
  private TypeDescription batchSchema;
  private ColumnVector[] projected;
  private SparkVectors.Wrapper[] wrappers;
  private ColumnarBatch out;
  private Plan.FileTask file;
  private boolean keys;
  private int deleteAt;
  private long lastW = Long.MIN_VALUE, lastR = Long.MIN_VALUE;
  private int lastB = Integer.MIN_VALUE;
  /** the open file's row-group runs to read ([start, end) file rows in pairs; null: all of
   *  it), the next run's index and the current run's end */
  private long[] rowRuns;
  private int nextRun;
  private long runEnd;
  /** deleted rows placed by stripe statistics (null: walk the keys) */
  private StripePlacement positions;
  private int nextPosition;
  /** the batch's deleted row positions, ascending */
  private final int[] dropped = new int[BATCH];

  AcidBatchReader(Plan.Task task, StructType required, String[] columns,
                  String[] partitionColumns, StripeSkipping skipping) {
    this.files = task.files;
    this.skipping = skipping;
    this.required = required;
    List<String> names = Arrays.asList(columns);
    List<String> partitions = Arrays.asList(partitionColumns);
    StructField[] fields = required.fields();
    childOf = new int[fields.length];
    boolean rowId = false;
    for (int i = 0; i < fields.length; i++) {
      String name = fields[i].name();
      childOf[i] = names.indexOf(name);
      if (childOf[i] >= 0) {
        continue;  // a field of the row struct
      }
      if (partitions.contains(name)) {
        childOf[i] = PARTITION - partitions.indexOf(name);
      } else if (name.equals("row__id")) {
        childOf[i] = ROW__ID;
        rowId = true;
      } else {
        throw new IllegalArgumentException("no column " + name + " in the plan");
      }
    }
    withRowId = rowId;
  }

  private static synchronized FileSystem fs() throws IOException {
    if (localFs == null) {
      RawLocalFileSystem raw = new RawLocalFileSystem();
      raw.initialize(java.net.URI.create("file:///"), CONF);
      localFs = raw;
    }
    return localFs;
  }

  private boolean openNext() throws IOException {
    closeRows();
    TypeDescription schema;
    List<TypeDescription> top;
    while (true) {
      boolean planned = runs.isEmpty();
      if (planned && next >= files.length) {
        return false;
      }
      file = planned ? files[next++] : runs.poll();
      try {
        reader = OrcFile.createReader(new Path(file.path), OrcFile.readerOptions(CONF)
            .filesystem(fs()).maxLength(file.length < 0 ? Long.MAX_VALUE : file.length)
            .useUTCTimestamp(true));
      } catch (IOException e) {
        throw AcidErrors.opening(file.path, e);
      }
      schema = reader.getSchema();
      top = schema.getChildren();
      if (top.size() != 6 || !schema.getFieldNames().get(ROW).equals("row")) {
        throw AcidErrors.corrupt("not an ACID event file: " + file.path + " (" + schema + ")");
      }
      if (file.expectedRows >= 0 && reader.getNumberOfRows() != file.expectedRows) {
        throw AcidErrors.data(file.path + " holds " + reader.getNumberOfRows() + " events, not "
            + "the " + file.expectedRows + " its compaction recorded: events were added or "
            + "removed after its commit");
      }
      List<Plan.FileTask> kept = planned && skipping != null
          ? skipping.runs(reader, file, top.get(ROW)) : null;
      if (kept == null) {
        break;
      }
      runs.addAll(kept);  // the file's stripes that may match, read as ranges
      closeRows();
    }
    StructField[] fields = required.fields();
    wrappers = new SparkVectors.Wrapper[fields.length];
    for (int i = 0; i < fields.length; i++) {
      if (childOf[i] <= PARTITION) {
        wrappers[i] = SparkVectors.constant(fields[i].dataType(),
            file.partitionValues[PARTITION - childOf[i]], file.path);
      }
    }
    TypeDescription row = top.get(ROW);
    positions = !withRowId && file.deletedRowIds.length > 0
        ? StripePlacement.of(reader, file) : null;
    nextPosition = 0;
    // deletes placed by position decode the rowIds too: the statistics prove one writer and
    // as many rows as rowIds from min to max, and only strictly ascending rowIds (checked per
    // batch) make that exactly min..max, so each row where it is placed
    keys = withRowId || file.deletedRowIds.length > 0;
    boolean[] include = new boolean[schema.getMaximumId() + 1];
    include[0] = true;
    if (keys) {
      include[top.get(WRITE_ID).getId()] = positions == null;
      include[top.get(BUCKET).getId()] = positions == null;
      include[top.get(ROW_ID).getId()] = true;
    }
    include[row.getId()] = true;
    int children = row.getChildren().size();  // fewer than the table's: before add_columns
    for (int c : childOf) {
      if (c >= 0 && c < children) {
        TypeDescription child = row.getChildren().get(c);
        for (int id = child.getId(); id <= child.getMaximumId(); id++) include[id] = true;
      }
    }
    Reader.Options options = reader.options().schema(schema).include(include);
    if (file.firstStripe >= 0) {
      List<StripeInformation> stripes = reader.getStripes();
      long start = stripes.get(file.firstStripe).getOffset();
      StripeInformation last = stripes.get(file.stopStripe - 1);
      options.range(start, last.getOffset() + last.getLength() - start);
    }
    rows = reader.rows(options);
    rowRuns = skipping == null ? null : skipping.rowGroups(rows, reader, file, row);
    nextRun = 0;
    runEnd = -1;  // the first next() seeks to the first run
    if (batch == null || !schema.equals(batchSchema)) {
      // one batch per schema, not per file: a task opens ~65 small files on S1's table
      batch = schema.createRowBatch(BATCH);
      batchSchema = schema;
    }
    StructColumnVector rowVector = (StructColumnVector) batch.cols[ROW];
    projected = new ColumnVector[fields.length];
    for (int i = 0; i < fields.length; i++) {
      if (childOf[i] <= PARTITION) {
        continue;
      } else if (childOf[i] >= children) {
        wrappers[i] = SparkVectors.nulls(fields[i].dataType());  // as Hive: NULL, by position
      } else if (childOf[i] >= 0) {
        projected[i] = rowVector.fields[childOf[i]];
        wrappers[i] = SparkVectors.wrap(fields[i].dataType(), projected[i], file.path);
      } else {
        wrappers[i] = SparkVectors.rowId(fields[i].dataType(), (LongColumnVector) batch.cols[WRITE_ID],
            (LongColumnVector) batch.cols[BUCKET], (LongColumnVector) batch.cols[ROW_ID]);
      }
    }
    out = new ColumnarBatch(wrappers);
    deleteAt = 0;
    lastW = Long.MIN_VALUE;
    lastB = Integer.MIN_VALUE;
    lastR = Long.MIN_VALUE;
    if (keys && positions == null && file.firstStripe > 0 && rowRuns == null) {
      keyBefore(StripePlacement.rowsBefore(reader.getStripes(), file.firstStripe));
    }
    return true;
  }

  /** Seeks to the next row-group run of the file; false when none is left. */
  private boolean seekRun() throws IOException {
    if (2 * nextRun >= rowRuns.length) {
      return false;
    }
    long start = rowRuns[2 * nextRun];
    runEnd = rowRuns[2 * nextRun + 1];
    nextRun++;
    rows.seekToRow(start);
    if (keys && positions == null) {
      keyBefore(start);
    }
    return true;
  }

  /**
   * Starts the order check of a read beginning at file row {@code row} (a stripe range, or a
   * row-group run after skipped rows) from the last event before it, as a whole-file read
   * would check it: without this, a ROW__ID repeated across the boundary of two ranges (two
   * tasks) would be read twice.
   */
  private void keyBefore(long row) throws IOException {
    if (row == 0) {
      return;
    }
    TypeDescription schema = reader.getSchema();
    List<TypeDescription> top = schema.getChildren();
    boolean[] include = new boolean[schema.getMaximumId() + 1];
    include[0] = true;
    include[top.get(WRITE_ID).getId()] = true;
    include[top.get(BUCKET).getId()] = true;
    include[top.get(ROW_ID).getId()] = true;
    try (RecordReader before = reader.rows(reader.options().schema(schema).include(include))) {
      before.seekToRow(row - 1);
      VectorizedRowBatch one = schema.createRowBatch(1);
      if (!before.nextBatch(one) || one.size != 1) {
        throw AcidErrors.corrupt("no event at row " + (row - 1) + " of " + file.path
            + ", where its stripes say one is");
      }
      lastW = ((LongColumnVector) one.cols[WRITE_ID]).vector[0];
      lastB = (int) ((LongColumnVector) one.cols[BUCKET]).vector[0];
      lastR = ((LongColumnVector) one.cols[ROW_ID]).vector[0];
    }
  }

  @Override
  public boolean next() throws IOException {
    while (true) {
      if (rows == null && !openNext()) {
        return false;
      }
      if (rowRuns != null && rows.getRowNumber() >= runEnd && !seekRun()) {
        closeRows();
        continue;
      }
      long base = rows.getRowNumber();
      if (!rows.nextBatch(batch)) {
        closeRows();
        continue;
      }
      // a batch running past its row-group run holds rows the filters rule out: cut there
      int n = rowRuns == null ? batch.size : (int) Math.min(batch.size, runEnd - base);
      if (positions != null) {
        LongColumnVector r = (LongColumnVector) batch.cols[ROW_ID];
        positions.check(base, r.vector, r.isRepeating, n);
        n = dropPositions(base, n);
      } else if (file.deletedRowIds.length > 0) {
        n = dropDeleted(n);
      } else if (keys) {
        checkOrder(n);
      }
      if (n == 0) {
        continue;
      }
      out.setNumRows(n);
      return true;
    }
  }

  /** Fails on a key not above the previous one: the walk below relies on ROW__ID order. */
  private void checkOrder(int n) throws IOException {
    LongColumnVector w = (LongColumnVector) batch.cols[WRITE_ID];
    LongColumnVector b = (LongColumnVector) batch.cols[BUCKET];
    LongColumnVector r = (LongColumnVector) batch.cols[ROW_ID];
    for (int i = 0; i < n; i++) {
      advance(w.vector[w.isRepeating ? 0 : i], (int) b.vector[b.isRepeating ? 0 : i],
              r.vector[r.isRepeating ? 0 : i]);
    }
  }

  private void advance(long kw, int kb, long kr) throws IOException {
    if (!StripePlacement.after(lastW, lastB, lastR, kw, kb, kr)) {
      throw AcidErrors.data("ROW__IDs out of order in " + file.path + " at (" + kw + ", "
                            + kb + ", " + kr + ")");
    }
    lastW = kw;
    lastB = kb;
    lastR = kr;
  }

  /** Drops the deleted rows a stripe-statistics proof placed (their rowIds checked). */
  private int dropPositions(long base, int n) {
    int gone = 0;
    long[] deleted = positions.deleted;
    while (nextPosition < deleted.length && deleted[nextPosition] < base + n) {
      long at = deleted[nextPosition++] - base;
      if (at >= 0) {
        dropped[gone++] = (int) at;
      }
    }
    if (gone == 0) {
      return n;
    }
    for (ColumnVector v : projected) {
      if (v != null) Compact.apply(v, dropped, gone, n);
    }
    return n - gone;
  }

  /** Drops the batch's deleted rows in place; returns the rows left. */
  private int dropDeleted(int n) throws IOException {
    LongColumnVector w = (LongColumnVector) batch.cols[WRITE_ID];
    LongColumnVector b = (LongColumnVector) batch.cols[BUCKET];
    LongColumnVector r = (LongColumnVector) batch.cols[ROW_ID];
    int gone = w.isRepeating && b.isRepeating && !r.isRepeating
        ? deletedOneWriter(w.vector[0], (int) b.vector[0], r.vector, n)
        : deletedAnyWriter(w, b, r, n);
    if (gone == 0) {
      return n;
    }
    for (ColumnVector v : projected) {
      if (v != null) Compact.apply(v, dropped, gone, n);
    }
    if (withRowId) {
      Compact.apply(w, dropped, gone, n);
      Compact.apply(b, dropped, gone, n);
      Compact.apply(r, dropped, gone, n);
    }
    return n - gone;
  }

  /**
   * A batch of one writer (a delta file's usual batch): checks the rowIds ascend, then
   * searches the deletes of that writer inside the batch's rowId range into the batch.
   */
  private int deletedOneWriter(long kw, int kb, long[] rows, int n) throws IOException {
    advance(kw, kb, rows[0]);
    for (int i = 1; i < n; i++) {
      if (rows[i] <= rows[i - 1]) {
        lastR = rows[i - 1];
        advance(kw, kb, rows[i]);  // throws
      }
    }
    lastR = rows[n - 1];
    long[] dw = file.deletedWriteIds;
    int[] db = file.deletedBuckets;
    long[] dr = file.deletedRowIds;
    int d = deleteAt;
    while (d < dr.length && StripePlacement.after(dw[d], db[d], dr[d], kw, kb, rows[0])) {
      d++;
    }
    int gone = 0;
    int from = 0;
    while (d < dr.length && dw[d] == kw && db[d] == kb && dr[d] <= rows[n - 1]) {
      int at = Arrays.binarySearch(rows, from, n, dr[d]);
      if (at >= 0) {
        dropped[gone++] = at;
        from = at + 1;
      } else {
        from = -at - 1;
      }
      d++;
    }
    deleteAt = d;
    return gone;
  }

  /** The general walk: every row's key against the sorted deletes. */
  private int deletedAnyWriter(LongColumnVector w, LongColumnVector b, LongColumnVector r,
                               int n) throws IOException {
    long[] dw = file.deletedWriteIds;
    int[] db = file.deletedBuckets;
    long[] dr = file.deletedRowIds;
    int d = deleteAt;
    int gone = 0;
    for (int i = 0; i < n; i++) {
      long kw = w.vector[w.isRepeating ? 0 : i];
      int kb = (int) b.vector[b.isRepeating ? 0 : i];
      long kr = r.vector[r.isRepeating ? 0 : i];
      advance(kw, kb, kr);
      while (d < dr.length && StripePlacement.after(dw[d], db[d], dr[d], kw, kb, kr)) {
        d++;
      }
      if (d < dr.length && dw[d] == kw && db[d] == kb && dr[d] == kr) {
        d++;
        dropped[gone++] = i;
      }
    }
    deleteAt = d;
    return gone;
  }

  @Override
  public ColumnarBatch get() {
    return out;
  }

  /** Closes the file's record reader and the reader (which holds the open file: a count()
   *  answered from statistics opens no record reader). */
  private void closeRows() throws IOException {
    if (rows != null) {
      rows.close();
      rows = null;
    }
    if (reader != null) {
      reader.close();
      reader = null;
    }
  }

  @Override
  public void close() throws IOException {
    closeRows();
  }

  /** In-place removal of rows from ORC vectors: the runs between deleted rows are moved
   *  down with System.arraycopy (1% deleted rows: ~40 runs per 4096-row batch). */
  static final class Compact {
    private Compact() {}

    static void apply(ColumnVector v, int[] dropped, int gone, int n) {
      if (v.isRepeating) {
        return;
      }
      if (!v.noNulls) {
        move(v.isNull, dropped, gone, n);
      }
      if (v instanceof LongColumnVector) {
        move(((LongColumnVector) v).vector, dropped, gone, n);
      } else if (v instanceof DoubleColumnVector) {
        move(((DoubleColumnVector) v).vector, dropped, gone, n);
      } else if (v instanceof BytesColumnVector) {
        BytesColumnVector s = (BytesColumnVector) v;
        move(s.vector, dropped, gone, n);
        move(s.start, dropped, gone, n);
        move(s.length, dropped, gone, n);
      } else if (v instanceof TimestampColumnVector) {
        TimestampColumnVector t = (TimestampColumnVector) v;
        move(t.time, dropped, gone, n);
        move(t.nanos, dropped, gone, n);
      } else if (v instanceof DecimalColumnVector) {
        swapDown(((DecimalColumnVector) v).vector, dropped, gone, n);
      } else {
        throw new UnsupportedOperationException("cannot drop rows of " + v.getClass());
      }
    }

    /**
     * Moves the kept rows of an array of objects ORC fills in place (a decimal vector's
     * writables) down by swapping, never copying: a copied reference would leave two slots
     * sharing one writable, and ORC's next batch would write both rows into it.
     */
    private static void swapDown(Object[] array, int[] dropped, int gone, int n) {
      int to = dropped[0];
      int k = 0;
      for (int from = dropped[0]; from < n; from++) {
        if (k < gone && dropped[k] == from) {
          k++;
          continue;
        }
        Object kept = array[from];
        array[from] = array[to];
        array[to++] = kept;
      }
    }

    /** Shifts the runs of {@code array} between the dropped positions down (any array). */
    private static void move(Object array, int[] dropped, int gone, int n) {
      int to = dropped[0];
      for (int k = 0; k < gone; k++) {
        int from = dropped[k] + 1;
        int end = k + 1 < gone ? dropped[k + 1] : n;
        if (end > from) {
          System.arraycopy(array, from, array, to, end - from);
          to += end - from;
        }
      }
    }
  }
}
