package acidstore.jvm;

import java.io.IOException;
import java.util.List;

import org.apache.orc.ColumnStatistics;
import org.apache.orc.IntegerColumnStatistics;
import org.apache.orc.Reader;
import org.apache.orc.StripeInformation;
import org.apache.orc.StripeStatistics;

/**
 * A count() over a file with deletes without decoding its keys: where a stripe's statistics
 * prove one writer (originalTransaction and bucket constant) and dense rowIds (max - min + 1
 * values, none null; rowIds ascend strictly in an ACID file), every delete of that writer
 * inside [min, max] names a row of the stripe, so its visible rows are its rows minus those
 * deletes. Any stripe without that proof makes the file decode its keys as usual. A count
 * takes the strict order on trust (a file breaking it is corrupt); a read placing deletes by
 * {@link #positions} checks it on the decoded rowIds alone ({@link Placement#check}): with
 * the writer constant and max - min + 1 rowIds, strictly ascending means the row at offset
 * i of its stripe has rowId min + i, one comparison a row.
 */
final class StatsCount {
  private StatsCount() {}

  /** The rows a count() sees in the file's stripes read, as batch sizes; null without
   *  the proof (see {@link #positions}). */
  static long[] rows(Reader reader, Plan.FileTask file) throws IOException {
    Placement placed = positions(reader, file);
    if (placed == null) {
      return null;
    }
    long[] gone = placed.deleted;
    List<StripeInformation> stripes = reader.getStripes();
    int[] range = range(stripes, file);
    long total = -gone.length;
    for (int s = range[0]; s < range[1]; s++) total += stripes.get(s).getNumberOfRows();
    long[] out = new long[(int) (total / Integer.MAX_VALUE) + 1];
    for (int i = 0; i < out.length; i++) {
      out[i] = Math.min(total, Integer.MAX_VALUE);
      total -= out[i];
    }
    return out;
  }

  /** The stripes read: {first, stop}. */
  private static int[] range(List<StripeInformation> stripes, Plan.FileTask file) {
    return file.firstStripe >= 0 ? new int[] {file.firstStripe, file.stopStripe}
        : new int[] {0, stripes.size()};
  }

  /**
   * Where the deleted rows of the stripes read are, and what each stripe's rowIds must be,
   * when every stripe proves one writer and dense rowIds (a row's position is then its
   * stripe's first row plus rowId - min); null otherwise (decode the keys).
   */
  static Placement positions(Reader reader, Plan.FileTask file) throws IOException {
    List<StripeInformation> stripes = reader.getStripes();
    List<StripeStatistics> stats = reader.getStripeStatistics();
    if (stats.size() != stripes.size()) {
      return null;
    }
    int first = range(stripes, file)[0];
    int stop = range(stripes, file)[1];
    long firstRow = 0;
    for (int s = 0; s < first; s++) firstRow += stripes.get(s).getNumberOfRows();
    long[] out = new long[file.deletedRowIds.length];
    long[] starts = new long[stop - first + 1];
    long[] mins = new long[stop - first];
    int n = 0;
    long stripeRow = firstRow;
    for (int s = first; s < stop; s++) {
      long rows = stripes.get(s).getNumberOfRows();
      starts[s - first] = stripeRow;
      if (rows > 0) {
        long[] key = dense(stats.get(s), rows);
        if (key == null) {
          return null;
        }
        mins[s - first] = key[2];
        int lo = lowerBound(file, key[0], (int) key[1], key[2]);
        int hi = lowerBound(file, key[0], (int) key[1], key[3] + 1);
        for (int d = lo; d < hi; d++) {
          out[n++] = stripeRow + file.deletedRowIds[d] - key[2];
        }
      }
      stripeRow += rows;
    }
    starts[stop - first] = stripeRow;
    return new Placement(java.util.Arrays.copyOf(out, n), starts, mins, file.path);
  }

  /** Deleted rows placed by stripe statistics, and the rowIds that placement assumes. */
  static final class Placement {
    /** file-row positions of the deleted rows, ascending */
    final long[] deleted;
    /** each stripe's first file row, then the row after the last stripe */
    private final long[] starts;
    /** each stripe's least rowId */
    private final long[] mins;
    private final String path;
    private int stripe;

    Placement(long[] deleted, long[] starts, long[] mins, String path) {
      this.deleted = deleted;
      this.starts = starts;
      this.mins = mins;
      this.path = path;
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
          throw new IOException("more rows than the stripe statistics of " + path + " count");
        }
        int end = (int) Math.min(n, starts[stripe + 1] - base);
        long expect = mins[stripe] + (at - starts[stripe]) - i;  // rowId of batch row j: expect + j
        for (int j = i; j < end; j++) {
          if (rowIds[repeating ? 0 : j] != expect + j) {
            throw new IOException("ROW__IDs out of order in " + path + " at row " + (base + j)
                + ": rowId " + rowIds[repeating ? 0 : j] + " where the stripe statistics place "
                + (expect + j));
          }
        }
        i = end;
      }
    }
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
      long mw = f.deletedWriteIds[mid];
      int mb = f.deletedBuckets[mid];
      boolean less = mw < w || (mw == w && (mb < b || (mb == b && f.deletedRowIds[mid] < r)));
      if (less) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
}
