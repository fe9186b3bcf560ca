package acidstore.jvm;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
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

  private final Plan.FileTask[] files;
  private final StructType required;
  /** per output column: the row struct child it reads, or -1 for ROW__ID */
  private final int[] childOf;
  private final boolean withRowId;
  private int next;
  private RecordReader rows;
  private VectorizedRowBatch batch;
  private ColumnVector[] projected;
  private SparkVectors.Wrapper[] wrappers;
  private ColumnarBatch out;
  private Plan.FileTask file;
  private boolean keys;
  private int deleteAt;
  private long lastW = Long.MIN_VALUE, lastR = Long.MIN_VALUE;
  private int lastB = Integer.MIN_VALUE;
  private final int[] keep = new int[BATCH];

  AcidBatchReader(Plan.Task task, StructType required, String[] userColumns) {
    this.files = task.files;
    this.required = required;
    List<String> names = Arrays.asList(userColumns);
    StructField[] fields = required.fields();
    childOf = new int[fields.length];
    boolean rowId = false;
    for (int i = 0; i < fields.length; i++) {
      childOf[i] = names.indexOf(fields[i].name());
      if (childOf[i] < 0) {
        if (!fields[i].name().equals("row__id")) {
          throw new IllegalArgumentException("no column " + fields[i].name() + " in the plan");
        }
        rowId = true;
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
    if (next >= files.length) {
      return false;
    }
    file = files[next++];
    Reader reader = OrcFile.createReader(new Path(file.path), OrcFile.readerOptions(CONF)
        .filesystem(fs()).maxLength(file.length).useUTCTimestamp(true));
    TypeDescription schema = reader.getSchema();
    List<TypeDescription> top = schema.getChildren();
    if (top.size() != 6 || !schema.getFieldNames().get(ROW).equals("row")) {
      throw new IOException("not an ACID event file: " + file.path + " (" + schema + ")");
    }
    TypeDescription row = top.get(ROW);
    keys = withRowId || file.deletedRowIds.length > 0;
    boolean[] include = new boolean[schema.getMaximumId() + 1];
    include[0] = true;
    if (keys) {
      include[top.get(WRITE_ID).getId()] = true;
      include[top.get(BUCKET).getId()] = true;
      include[top.get(ROW_ID).getId()] = true;
    }
    include[row.getId()] = true;
    for (int c : childOf) {
      if (c >= 0) {
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
    batch = schema.createRowBatch(BATCH);
    StructColumnVector rowVector = (StructColumnVector) batch.cols[ROW];
    StructField[] fields = required.fields();
    projected = new ColumnVector[fields.length];
    wrappers = new SparkVectors.Wrapper[fields.length];
    for (int i = 0; i < fields.length; i++) {
      if (childOf[i] >= 0) {
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
    return true;
  }

  @Override
  public boolean next() throws IOException {
    while (true) {
      if (rows == null && !openNext()) {
        return false;
      }
      if (!rows.nextBatch(batch)) {
        closeRows();
        continue;
      }
      int n = batch.size;
      if (file.deletedRowIds.length > 0) {
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
    if (kw < lastW || (kw == lastW && (kb < lastB || (kb == lastB && kr <= lastR)))) {
      throw new IOException("ROW__IDs out of order in " + file.path + " at (" + kw + ", "
                            + kb + ", " + kr + ")");
    }
    lastW = kw;
    lastB = kb;
    lastR = kr;
  }

  /** Drops the batch's deleted rows in place; returns the rows left. */
  private int dropDeleted(int n) throws IOException {
    LongColumnVector w = (LongColumnVector) batch.cols[WRITE_ID];
    LongColumnVector b = (LongColumnVector) batch.cols[BUCKET];
    LongColumnVector r = (LongColumnVector) batch.cols[ROW_ID];
    long[] dw = file.deletedWriteIds;
    int[] db = file.deletedBuckets;
    long[] dr = file.deletedRowIds;
    int d = deleteAt;
    int kept = 0;
    for (int i = 0; i < n; i++) {
      long kw = w.vector[w.isRepeating ? 0 : i];
      int kb = (int) b.vector[b.isRepeating ? 0 : i];
      long kr = r.vector[r.isRepeating ? 0 : i];
      advance(kw, kb, kr);
      while (d < dr.length && (dw[d] < kw || (dw[d] == kw && (db[d] < kb
          || (db[d] == kb && dr[d] < kr))))) {
        d++;
      }
      if (d < dr.length && dw[d] == kw && db[d] == kb && dr[d] == kr) {
        d++;
      } else {
        keep[kept++] = i;
      }
    }
    deleteAt = d;
    if (kept < n) {
      for (ColumnVector v : projected) {
        if (v != null) Compact.apply(v, keep, kept);
      }
      if (withRowId) {
        Compact.apply(w, keep, kept);
        Compact.apply(b, keep, kept);
        Compact.apply(r, keep, kept);
      }
    }
    return kept;
  }

  @Override
  public ColumnarBatch get() {
    return out;
  }

  private void closeRows() throws IOException {
    if (rows != null) {
      rows.close();
      rows = null;
    }
  }

  @Override
  public void close() throws IOException {
    closeRows();
  }

  /** In-place removal of rows from ORC vectors (kept indices ascending). */
  static final class Compact {
    private Compact() {}

    static void apply(ColumnVector v, int[] keep, int kept) {
      if (v.isRepeating) {
        return;
      }
      if (!v.noNulls) {
        boolean[] nulls = v.isNull;
        for (int j = 0; j < kept; j++) nulls[j] = nulls[keep[j]];
      }
      if (v instanceof LongColumnVector) {
        long[] a = ((LongColumnVector) v).vector;
        for (int j = 0; j < kept; j++) a[j] = a[keep[j]];
      } else if (v instanceof DoubleColumnVector) {
        double[] a = ((DoubleColumnVector) v).vector;
        for (int j = 0; j < kept; j++) a[j] = a[keep[j]];
      } else if (v instanceof BytesColumnVector) {
        BytesColumnVector s = (BytesColumnVector) v;
        for (int j = 0; j < kept; j++) {
          int i = keep[j];
          s.vector[j] = s.vector[i];
          s.start[j] = s.start[i];
          s.length[j] = s.length[i];
        }
      } else if (v instanceof TimestampColumnVector) {
        TimestampColumnVector t = (TimestampColumnVector) v;
        for (int j = 0; j < kept; j++) {
          t.time[j] = t.time[keep[j]];
          t.nanos[j] = t.nanos[keep[j]];
        }
      } else {
        throw new UnsupportedOperationException("cannot drop rows of " + v.getClass());
      }
    }
  }
}
