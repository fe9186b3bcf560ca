package acidstore.jvm;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.orc.ColumnStatistics;
import org.apache.orc.DateColumnStatistics;
import org.apache.orc.DoubleColumnStatistics;
import org.apache.orc.IntegerColumnStatistics;
import org.apache.orc.OrcFile;
import org.apache.orc.OrcProto;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.StringColumnStatistics;
import org.apache.orc.StripeInformation;
import org.apache.orc.StripeStatistics;
import org.apache.orc.TypeDescription;
import org.apache.orc.impl.ColumnStatisticsImpl;
import org.apache.orc.impl.RecordReaderImpl;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The stripes and row groups of an event file that the filters Spark pushes on the rows'
 * columns may match, by the ORC statistics of the {@code row} struct's fields
 * ({@link FilterBounds}): integer, floating-point (where no NaN is among the values), date and
 * string columns, whose minimum and maximum bound every value. What no row of which can
 * satisfy a filter is not read, as Spark's ORC reader skips it: stripes by the file's stripe
 * statistics (the rest read as stripe ranges), then row groups by the row index of the kept
 * stripes (the rest read as runs, one seek each). The deleted ROW__IDs among skipped rows
 * are passed over by the reads of the rows kept. Timestamp statistics are not used (writers
 * differ in their zone handling), nor statistics a file lacks.
 */
final class StripeSkipping implements java.io.Serializable {
  private static final long serialVersionUID = 1L;
  private final Filter[] filters;
  private final FilterBounds.Columns columns;

  StripeSkipping(Filter[] filters, String[] columns, StructType schema) {
    this.filters = filters;
    this.columns = new FilterBounds.Columns(columns, schema);
  }

  /**
   * The stripe ranges of {@code file} to read instead of it, or null to read it as planned
   * (every stripe may match, or the file has no usable statistics); empty when none may.
   */
  List<Plan.FileTask> runs(Reader reader, Plan.FileTask file, TypeDescription row)
      throws IOException {
    List<StripeInformation> stripes = reader.getStripes();
    List<StripeStatistics> stats = reader.getStripeStatistics();
    if (stats.size() != stripes.size()) {
      return null;
    }
    int[] range = StripePlacement.range(stripes, file);
    int first = range[0], stop = range[1];
    boolean strings = stringsBounded(reader);
    List<Plan.FileTask> out = new ArrayList<>();
    int runStart = -1;
    for (int s = first; s <= stop; s++) {
      boolean read = s < stop && mayMatch(stats.get(s).getColumnStatistics(),
          stripes.get(s).getNumberOfRows(), row, strings);
      if (read && runStart < 0) {
        runStart = s;
      } else if (!read && runStart >= 0) {
        if (runStart == first && s == stop) {
          return null;  // nothing skipped
        }
        out.add(new Plan.FileTask(file.path, file.length, runStart, s, file.expectedRows,
            file.partitionValues, file.deletedWriteIds, file.deletedBuckets,
            file.deletedRowIds));
        runStart = -1;
      }
    }
    return out;
  }

  /**
   * The file rows [start, end) of {@code file}'s row groups whose row-index statistics may
   * match (pairs, ascending, adjacent groups merged), or null when every group may match
   * or the file has no row index: then read it as planned. Stripe statistics ruled out
   * whole stripes first; this reads the row index of the filters' columns only.
   */
  long[] rowGroups(RecordReader rows, Reader reader, Plan.FileTask file, TypeDescription row)
      throws IOException {
    long stride = reader.getRowIndexStride();
    if (stride <= 0 || !(rows instanceof RecordReaderImpl impl)) {
      return null;
    }
    boolean[] indexed = new boolean[reader.getSchema().getMaximumId() + 1];
    for (Filter f : filters) {
      for (String name : f.references()) {
        int i = columns.names.indexOf(name);
        if (i >= 0 && i < row.getChildren().size()) {
          indexed[row.getChildren().get(i).getId()] = true;
        }
      }
    }
    indexed[0] = true;
    indexed[row.getId()] = true;
    List<StripeInformation> stripes = reader.getStripes();
    int[] range = StripePlacement.range(stripes, file);
    int first = range[0], stop = range[1];
    long at = StripePlacement.rowsBefore(stripes, first);
    boolean strings = stringsBounded(reader);
    long[] out = new long[8];
    int n = 0;
    boolean all = true;
    for (int s = first; s < stop; s++) {
      long stripeRows = stripes.get(s).getNumberOfRows();
      // the reader's stripes are those of its range (index s - first); a stripe of one row
      // group was judged by its stripe statistics already (its index, one more read for
      // each small delta file, could rule out nothing more)
      OrcProto.RowIndex[] index = stripeRows <= stride ? null
          : impl.readRowIndex(s - first, indexed, indexed).getRowGroupIndex();
      for (long start = at; start < at + stripeRows; start += stride) {
        long end = Math.min(start + stride, at + stripeRows);
        int group = (int) ((start - at) / stride);
        if (index != null
            && !mayMatch(groupStatistics(index, group, row), end - start, row, strings)) {
          all = false;
        } else if (n > 0 && out[n - 1] == start) {
          out[n - 1] = end;
        } else {
          if (n == out.length) {
            out = Arrays.copyOf(out, 2 * n);
          }
          out[n++] = start;
          out[n++] = end;
        }
      }
      at += stripeRows;
    }
    return all ? null : Arrays.copyOf(out, n);
  }

  /** One row group's statistics of the indexed columns (null where a column has none). */
  private static ColumnStatistics[] groupStatistics(OrcProto.RowIndex[] index, int group,
                                                   TypeDescription row) {
    ColumnStatistics[] out = new ColumnStatistics[index.length];
    for (TypeDescription child : row.getChildren()) {
      int id = child.getId();
      if (id < index.length && index[id] != null && group < index[id].getEntryCount()) {
        out[id] = ColumnStatisticsImpl.deserialize(child,
            index[id].getEntry(group).getStatistics());
      }
    }
    return out;
  }

  /** Hive's ORC writers before HIVE-8732 wrote wrong string minimums and maximums (ORC's
   *  own predicate pushdown ignores them too); every other writer's bound the values. */
  private static boolean stringsBounded(Reader reader) {
    return reader.getWriterVersion().includes(OrcFile.WriterVersion.HIVE_8732);
  }

  private boolean mayMatch(ColumnStatistics[] stats, long rows, TypeDescription row,
                           boolean strings) {
    return FilterBounds.mayMatch(filters, name -> {
      int i = columns.names.indexOf(name);
      if (i < 0 || i >= row.getChildren().size()) {
        return null;  // not a row column, or one added after this file was written
      }
      int id = row.getChildren().get(i).getId();
      return id < stats.length && stats[id] != null
          ? range(columns.types[i], stats[id], rows, strings) : null;
    });
  }

  /** What the statistics of {@code rows} rows bound of a column of {@code type}, or null
   *  (nothing); string bounds only where {@code strings} says the writer got them right. */
  static FilterBounds.Range range(DataType type, ColumnStatistics s, long rows,
                                  boolean strings) {
    boolean mayBeNull = s.hasNull() || s.getNumberOfValues() < rows;
    if (s.getNumberOfValues() == 0) {
      return new FilterBounds.Range(type, null, null, true);
    }
    if ((type instanceof ByteType || type instanceof ShortType || type instanceof IntegerType
        || type instanceof LongType) && s instanceof IntegerColumnStatistics i) {
      return new FilterBounds.Range(type, i.getMinimum(), i.getMaximum(), mayBeNull);
    }
    if ((type instanceof DoubleType || type instanceof FloatType)
        && s instanceof DoubleColumnStatistics d && !Double.isNaN(d.getSum())) {
      // a NaN among the values makes the sum NaN; writers leave it out of the minimum and
      // maximum, yet Spark orders it above every number, so only a NaN-free stripe is bounded
      return new FilterBounds.Range(type, d.getMinimum(), d.getMaximum(), mayBeNull);
    }
    if (type instanceof DateType && s instanceof DateColumnStatistics d) {
      return new FilterBounds.Range(type, (long) d.getMinimumDayOfEpoch(),
          (long) d.getMaximumDayOfEpoch(), mayBeNull);
    }
    if (strings && type.equals(DataTypes.StringType) && s instanceof StringColumnStatistics t
        && t.getLowerBound() != null && t.getUpperBound() != null) {
      return new FilterBounds.Range(type, UTF8String.fromString(t.getLowerBound()),
          UTF8String.fromString(t.getUpperBound()), mayBeNull);
    }
    return null;
  }
}
