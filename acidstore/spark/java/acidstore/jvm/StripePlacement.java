package acidstore.jvm;

import java.io.IOException;
import java.util.List;

import org.apache.orc.ColumnStatistics;
import org.apache.orc.IntegerColumnStatistics;
import org.apache.orc.Reader;
import org.apache.orc.StripeInformation;
import org.apache.orc.StripeStatistics;

/**
 * A file's deleted rows placed by stripe statistics, without decoding its writer and bucket
 * columns: where a stripe's statistics prove one writer (originalTransaction and bucket
 * constant) and dense rowIds (max - min + 1 values, none null), every delete of that writer
 * inside [min, max] names a row of the stripe, at its first row plus rowId - min. That holds
 * only if the rowIds ascend strictly, which the statistics cannot prove, so the reader
 * decodes the rowId column and {@link #check}s it: strictly ascending is then exactly "the
 * row at offset i of its stripe has rowId min + i", one comparison a row. A count() goes this
 * way too (rowIds decoded, nothing else), so a file breaking the order fails every read.
 */
final class StripePlacement {
  /** file-row positions of the deleted rows, ascending */
  final long[] deleted;
  /** each stripe's first file row, then the row after the last stripe */
  private final long[] starts;
  /** each stripe's least rowId */
  private final long[] mins;
  private final String path;
  private int stripe;

  private StripePlacement(long[] deleted, long[] starts, long[] mins, String path) {
    this.deleted = deleted;
    this.starts = starts;
    this.mins = mins;
    this.path = path;
  }

  /**
   * The placement of the deleted rows of the file's stripes read, when every stripe of the
   * file proves one writer and dense rowIds; null otherwise (decode the keys). The stripes'
   * key ranges must then ascend through the whole file, each stripe's first key above the
   * last one before it: each task checks only the rowIds inside its own stripes, so this is
   * what keeps two stripes (in one task or in two) from holding the same ROW__ID.
   */
  static StripePlacement of(Reader reader, Plan.FileTask file) throws IOException {
    List<StripeInformation> stripes = reader.getStripes();
    List<StripeStatistics> stats = reader.getStripeStatistics();
    if (stats.size() != stripes.size()) {
      return null;
    }
    long[][] keys = new long[stripes.size()][];
    long[] previous = null;
    for (int s = 0; s < stripes.size(); s++) {
      long rows = stripes.get(s).getNumberOfRows();
      if (rows == 0) {
        continue;
      }
      keys[s] = dense(stats.get(s), rows);
      if (keys[s] == null) {
        return null;
      }
      if (previous != null
          && !after(previous[0], previous[1], previous[3], keys[s][0], keys[s][1], keys[s][2])) {
        throw AcidErrors.data("ROW__IDs out of order in " + file.path + ": stripe " + s
            + " starts at (" + keys[s][0] + ", " + keys[s][1] + ", " + keys[s][2]
            + "), not after the stripe before it, which ends at (" + previous[0] + ", "
            + previous[1] + ", " + previous[3] + ")");
      }
      previous = keys[s];
    }
    int[] range = range(stripes, file);
    int first = range[0];
    int stop = range[1];
    long firstRow = rowsBefore(stripes, first);
    long[] out = new long[file.deletedRowIds.length];
    long[] starts = new long[stop - first + 1];
    long[] mins = new long[stop - first];
    int n = 0;
    long stripeRow = firstRow;
    for (int s = first; s < stop; s++) {
      starts[s - first] = stripeRow;
      long[] key = keys[s];
      if (key != null) {
        mins[s - first] = key[2];
        int lo = lowerBound(file, key[0], (int) key[1], key[2]);
        int hi = lowerBound(file, key[0], (int) key[1], key[3] + 1);
        for (int d = lo; d < hi; d++) {
          out[n++] = stripeRow + file.deletedRowIds[d] - key[2];
        }
      }
      stripeRow += stripes.get(s).getNumberOfRows();
    }
    starts[stop - first] = stripeRow;
    return new StripePlacement(java.util.Arrays.copyOf(out, n), starts, mins, file.path);
  }

  /**
   * Fails unless the rows at file positions base .. base + n - 1 carry exactly the rowIds
   * the placement assumed; rows come in file order, so the stripe only moves forward.
   */
  void check(long base, long[] rowIds, boolean repeating, int n) throws IOException {
    int i = 0;
    while (i < n) {
      long at = base + i;
      while (stripe + 1 < starts.length && starts[stripe + 1] <= at) stripe++;
      if (stripe >= mins.length) {
        throw AcidErrors.corrupt("more rows than the stripe statistics of " + path + " count");
      }
      int end = (int) Math.min(n, starts[stripe + 1] - base);
      long expect = mins[stripe] + (at - starts[stripe]) - i;  // rowId of batch row j: expect + j
      for (int j = i; j < end; j++) {
        if (rowIds[repeating ? 0 : j] != expect + j) {
          throw AcidErrors.data("ROW__IDs out of order in " + path + " at row " + (base + j)
              + ": rowId " + rowIds[repeating ? 0 : j] + " where the stripe statistics place "
              + (expect + j));
        }
      }
      i = end;
    }
  }

  /** Whether (w1, b1, r1) comes strictly after (w0, b0, r0) in ROW__ID order. */
  static boolean after(long w0, long b0, long r0, long w1, long b1, long r1) {
    return w1 > w0 || (w1 == w0 && (b1 > b0 || (b1 == b0 && r1 > r0)));
  }

  /** The file's rows before {@code stripe}: the file-row position of its first row. */
  static long rowsBefore(List<StripeInformation> stripes, int stripe) {
    long rows = 0;
    for (int s = 0; s < stripe; s++) rows += stripes.get(s).getNumberOfRows();
    return rows;
  }

  /** The stripes a file task reads: {first, stop}. */
  static int[] range(List<StripeInformation> stripes, Plan.FileTask file) {
    return file.firstStripe >= 0 ? new int[] {file.firstStripe, file.stopStripe}
        : new int[] {0, stripes.size()};
  }

  /**
   * (writer, bucket, min rowId, max rowId) of a non-empty stripe whose statistics prove one
   * writer and dense rowIds; null otherwise.
   */
  private static long[] dense(StripeStatistics stripe, long rows) {
    ColumnStatistics[] cols = stripe.getColumnStatistics();
    if (!(cols[2] instanceof IntegerColumnStatistics)
        || !(cols[3] instanceof IntegerColumnStatistics)
        || !(cols[4] instanceof IntegerColumnStatistics)) {
      return null;
    }
    IntegerColumnStatistics w = (IntegerColumnStatistics) cols[2];
    IntegerColumnStatistics b = (IntegerColumnStatistics) cols[3];
    IntegerColumnStatistics r = (IntegerColumnStatistics) cols[4];
    if (w.getMinimum() != w.getMaximum() || b.getMinimum() != b.getMaximum()
        || r.getNumberOfValues() != rows || r.hasNull()
        || r.getMaximum() - r.getMinimum() + 1 != rows) {
      return null;
    }
    return new long[] {w.getMinimum(), b.getMinimum(), r.getMinimum(), r.getMaximum()};
  }

  /** The first delete at or after (w, b, r): the keys are sorted (w, b, rowId). */
  private static int lowerBound(Plan.FileTask f, long w, int b, long r) {
    int lo = 0, hi = f.deletedRowIds.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (after(f.deletedWriteIds[mid], f.deletedBuckets[mid], f.deletedRowIds[mid], w, b, r)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }
}
