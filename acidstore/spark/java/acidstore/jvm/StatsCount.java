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
 * {@link #positions} checks it on the decoded keys (AcidBatchReader.checkOrder).
 */
final class StatsCount {
  private StatsCount() {}

  /** The rows a count() sees in the file's stripes read, as batch sizes; null without
   *  the proof (see {@link #positions}). */
  static long[] rows(Reader reader, Plan.FileTask file) throws IOException {
    long[] gone = positions(reader, file);
    if (gone == null) {
      return null;
    }
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
   * The file-row positions of the deleted rows among the stripes read, ascending, where
   * every stripe proves one writer and dense rowIds (a row's position is then its stripe's
   * first row plus rowId - min); null otherwise (decode the keys).
   */
  static long[] positions(Reader reader, Plan.FileTask file) throws IOException {
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
    int n = 0;
    long stripeRow = firstRow;
    for (int s = first; s < stop; s++) {
      long rows = stripes.get(s).getNumberOfRows();
      if (rows > 0) {
        long[] key = dense(stats.get(s), rows);
        if (key == null) {
          return null;
        }
        int lo = lowerBound(file, key[0], (int) key[1], key[2]);
        int hi = lowerBound(file, key[0], (int) key[1], key[3] + 1);
        for (int d = lo; d < hi; d++) {
          out[n++] = stripeRow + file.deletedRowIds[d] - key[2];
        }
      }
      stripeRow += rows;
    }
    return java.util.Arrays.copyOf(out, n);
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
