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
 * deletes. Any stripe without that proof makes the file decode its keys as usual.
 */
final class StatsCount {
  private StatsCount() {}

  static long[] rows(Reader reader, Plan.FileTask file) throws IOException {
    List<StripeInformation> stripes = reader.getStripes();
    List<StripeStatistics> stats = reader.getStripeStatistics();
    if (stats.size() != stripes.size()) {
      return null;
    }
    int first = file.firstStripe >= 0 ? file.firstStripe : 0;
    int stop = file.firstStripe >= 0 ? file.stopStripe : stripes.size();
    long[] out = new long[stop - first];
    for (int s = first; s < stop; s++) {
      ColumnStatistics[] cols = stats.get(s).getColumnStatistics();
      long rows = stripes.get(s).getNumberOfRows();
      if (!(cols[2] instanceof IntegerColumnStatistics)
          || !(cols[3] instanceof IntegerColumnStatistics)
          || !(cols[4] instanceof IntegerColumnStatistics)) {
        return null;
      }
      IntegerColumnStatistics w = (IntegerColumnStatistics) cols[2];
      IntegerColumnStatistics b = (IntegerColumnStatistics) cols[3];
      IntegerColumnStatistics r = (IntegerColumnStatistics) cols[4];
      if (rows == 0) {
        out[s - first] = 0;
        continue;
      }
      if (w.getMinimum() != w.getMaximum() || b.getMinimum() != b.getMaximum()
          || r.getNumberOfValues() != rows || r.hasNull()
          || r.getMaximum() - r.getMinimum() + 1 != rows) {
        return null;
      }
      out[s - first] = rows - hits(file, w.getMinimum(), (int) b.getMinimum(), r.getMinimum(),
                                   r.getMaximum());
    }
    return out;
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
    int first = file.firstStripe >= 0 ? file.firstStripe : 0;
    int stop = file.firstStripe >= 0 ? file.stopStripe : stripes.size();
    long firstRow = 0;
    for (int s = 0; s < first; s++) firstRow += stripes.get(s).getNumberOfRows();
    long[] out = new long[file.deletedRowIds.length];
    int n = 0;
    long stripeRow = firstRow;
    for (int s = first; s < stop; s++) {
      long rows = stripes.get(s).getNumberOfRows();
      if (rows > 0) {
        ColumnStatistics[] cols = stats.get(s).getColumnStatistics();
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
        int lo = lowerBound(file, w.getMinimum(), (int) b.getMinimum(), r.getMinimum());
        int hi = lowerBound(file, w.getMinimum(), (int) b.getMinimum(), r.getMaximum() + 1);
        for (int d = lo; d < hi; d++) {
          out[n++] = stripeRow + file.deletedRowIds[d] - r.getMinimum();
        }
      }
      stripeRow += rows;
    }
    return java.util.Arrays.copyOf(out, n);
  }

  /** Deletes equal to (w, b) with rowId in [lo, hi]: the keys are sorted (w, b, rowId). */
  private static int hits(Plan.FileTask f, long w, int b, long lo, long hi) {
    return lowerBound(f, w, b, hi + 1) - lowerBound(f, w, b, lo);
  }

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
