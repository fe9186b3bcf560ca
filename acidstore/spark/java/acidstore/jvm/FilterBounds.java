package acidstore.jvm;

import java.io.Serializable;
import java.sql.Date;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

import org.apache.spark.sql.catalyst.util.DateTimeUtils;
import org.apache.spark.sql.sources.AlwaysFalse;
import org.apache.spark.sql.sources.AlwaysTrue;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualNullSafe;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;
import org.apache.spark.sql.sources.StringContains;
import org.apache.spark.sql.sources.StringEndsWith;
import org.apache.spark.sql.sources.StringStartsWith;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
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
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Whether a filter Spark pushes into a scan can hold for any row of a group of rows whose
 * columns are known only by bounds: one partition (each partition column a single value) or
 * one stripe (ORC's minimum and maximum). A group is skipped only when no row of it can make
 * the filter TRUE; what this does not model (a column without bounds, a literal of another
 * type, an expression) could be anything, so nothing is skipped for it. Spark still applies
 * every filter to the rows read: skipping changes which rows are read, never the answer.
 */
final class FilterBounds {
  private FilterBounds() {
  }

  /**
   * What is known of one column over the group: its non-null values lie in [low, high]
   * (Spark's internal values: Long, Double, UTF8String or byte[]; both null when it has
   * none), and whether it may hold NULLs.
   */
  record Range(DataType type, Object low, Object high, boolean mayBeNull) {
    static Range single(DataType type, Object value) {
      return new Range(type, value, value, value == null);
    }

    boolean hasValues() {
      return low != null;
    }
  }

  /** Which truth values the filter may take on the group's rows. */
  record Outcomes(boolean canTrue, boolean canFalse, boolean canNull) {
    static final Outcomes ANY = new Outcomes(true, true, true);

    Outcomes not() {
      return new Outcomes(canFalse, canTrue, canNull);
    }

    Outcomes and(Outcomes o) {
      return new Outcomes(canTrue && o.canTrue, canFalse || o.canFalse,
          (canNull && (o.canTrue || o.canNull)) || (o.canNull && (canTrue || canNull)));
    }

    Outcomes or(Outcomes o) {
      return not().and(o.not()).not();
    }
  }

  /** Columns by name with their Spark types (of the table's schema), as filters name them.
   *  A dropped column's place in the files' row struct has no Spark type (null): no filter
   *  names it. */
  static final class Columns implements Serializable {
    private static final long serialVersionUID = 1L;
    final List<String> names;
    final DataType[] types;

    Columns(String[] names, StructType schema) {
      this.names = Arrays.asList(names);
      this.types = new DataType[names.length];
      List<String> known = Arrays.asList(schema.fieldNames());
      for (int i = 0; i < names.length; i++) {
        types[i] = known.contains(names[i]) ? schema.apply(names[i]).dataType() : null;
      }
    }
  }

  /** The pushed {@code filters} that name only the given columns (and at least one). */
  static Filter[] naming(Filter[] filters, String[] columns) {
    List<String> names = Arrays.asList(columns);
    List<Filter> out = new ArrayList<>();
    for (Filter f : filters) {
      if (f.references().length > 0 && Arrays.stream(f.references()).allMatch(names::contains)) {
        out.add(f);
      }
    }
    return out.toArray(new Filter[0]);
  }

  /** Whether some row of the group may satisfy every one of {@code filters}. */
  static boolean mayMatch(Filter[] filters, Function<String, Range> columns) {
    for (Filter f : filters) {
      if (!outcomes(f, columns).canTrue()) {
        return false;
      }
    }
    return true;
  }

  static Outcomes outcomes(Filter f, Function<String, Range> columns) {
    if (f instanceof And a) {
      return outcomes(a.left(), columns).and(outcomes(a.right(), columns));
    }
    if (f instanceof Or o) {
      return outcomes(o.left(), columns).or(outcomes(o.right(), columns));
    }
    if (f instanceof Not n) {
      return outcomes(n.child(), columns).not();
    }
    if (f instanceof AlwaysTrue) {
      return new Outcomes(true, false, false);
    }
    if (f instanceof AlwaysFalse) {
      return new Outcomes(false, true, false);
    }
    Range r = f.references().length == 1 ? columns.apply(f.references()[0]) : null;
    if (r == null) {
      return Outcomes.ANY;
    }
    if (f instanceof IsNull) {
      return new Outcomes(r.mayBeNull(), r.hasValues(), false);
    }
    if (f instanceof IsNotNull) {
      return new Outcomes(r.hasValues(), r.mayBeNull(), false);
    }
    if (f instanceof EqualNullSafe e) {
      if (e.value() == null) {
        return new Outcomes(r.mayBeNull(), r.hasValues(), false);
      }
      Outcomes eq = compare(r, e.value(), Test.EQ);
      return new Outcomes(eq.canTrue(), eq.canFalse() || r.mayBeNull(), false);
    }
    if (f instanceof EqualTo e) {
      return compare(r, e.value(), Test.EQ);
    }
    if (f instanceof GreaterThan g) {
      return compare(r, g.value(), Test.GT);
    }
    if (f instanceof GreaterThanOrEqual g) {
      return compare(r, g.value(), Test.GE);
    }
    if (f instanceof LessThan l) {
      return compare(r, l.value(), Test.LT);
    }
    if (f instanceof LessThanOrEqual l) {
      return compare(r, l.value(), Test.LE);
    }
    if (f instanceof In in) {
      return in(r, in.values());
    }
    if (f instanceof StringStartsWith s) {
      return strings(r, s.value(), (v, p) -> v.startsWith(p), true);
    }
    if (f instanceof StringEndsWith s) {
      return strings(r, s.value(), (v, p) -> v.endsWith(p), false);
    }
    if (f instanceof StringContains s) {
      return strings(r, s.value(), (v, p) -> v.contains(p), false);
    }
    return Outcomes.ANY;
  }

  private enum Test { EQ, GT, GE, LT, LE }

  private static Outcomes compare(Range r, Object literal, Test test) {
    if (literal == null) {
      return new Outcomes(false, false, true);  // a comparison with NULL is NULL
    }
    Object v = internal(r.type(), literal);
    if (v == null) {
      return Outcomes.ANY;
    }
    if (!r.hasValues()) {
      return new Outcomes(false, false, r.mayBeNull());
    }
    int low = compare(r.low(), v);
    int high = compare(r.high(), v);
    boolean canTrue;
    boolean canFalse;
    switch (test) {
      case EQ -> {
        canTrue = low <= 0 && high >= 0;
        canFalse = low != 0 || high != 0;
      }
      case GT -> {
        canTrue = high > 0;
        canFalse = low <= 0;
      }
      case GE -> {
        canTrue = high >= 0;
        canFalse = low < 0;
      }
      case LT -> {
        canTrue = low < 0;
        canFalse = high >= 0;
      }
      default -> {
        canTrue = low <= 0;
        canFalse = high > 0;
      }
    }
    return new Outcomes(canTrue, canFalse, r.mayBeNull());
  }

  private static Outcomes in(Range r, Object[] literals) {
    if (literals.length == 0) {
      return new Outcomes(false, true, false);  // Spark: x IN () is FALSE, NULL x too
    }
    Outcomes any = new Outcomes(false, true, false);
    for (Object literal : literals) {
      any = any.or(compare(r, literal, Test.EQ));
    }
    return any;
  }

  private interface StringTest {
    boolean holds(UTF8String value, UTF8String pattern);
  }

  /** A string test: exact on a single value; on a range only a prefix can rule it out. */
  private static Outcomes strings(Range r, String pattern, StringTest test, boolean prefix) {
    if (!r.type().equals(DataTypes.StringType)) {
      return Outcomes.ANY;
    }
    if (pattern == null) {
      return new Outcomes(false, false, true);
    }
    if (!r.hasValues()) {
      return new Outcomes(false, false, r.mayBeNull());
    }
    UTF8String p = UTF8String.fromString(pattern);
    UTF8String low = (UTF8String) r.low();
    UTF8String high = (UTF8String) r.high();
    if (low.equals(high)) {
      boolean holds = test.holds(low, p);
      return new Outcomes(holds, !holds, r.mayBeNull());
    }
    if (prefix) {
      // the strings that start with p sort from p up to p followed by the highest bytes
      int n = Math.min(low.numBytes(), p.numBytes());
      boolean canTrue = high.compareTo(p) >= 0
          && UTF8String.fromBytes(Arrays.copyOf(low.getBytes(), n)).compareTo(p) <= 0;
      return new Outcomes(canTrue, true, r.mayBeNull());
    }
    return new Outcomes(true, true, r.mayBeNull());
  }

  /**
   * A pushed literal (a Java value, as Spark hands filters to sources) in Spark's internal
   * form for a column of {@code type}, or null where this does not know how they compare.
   */
  static Object internal(DataType type, Object literal) {
    if (type instanceof ByteType || type instanceof ShortType || type instanceof IntegerType
        || type instanceof LongType) {
      return literal instanceof Byte || literal instanceof Short || literal instanceof Integer
          || literal instanceof Long ? (Object) ((Number) literal).longValue() : null;
    }
    if (type instanceof BooleanType) {
      return literal instanceof Boolean b ? (Object) (b ? 1L : 0L) : null;
    }
    if (type instanceof FloatType || type instanceof DoubleType) {
      return literal instanceof Double || literal instanceof Float
          ? (Object) ((Number) literal).doubleValue() : null;
    }
    if (type instanceof DateType) {
      if (literal instanceof LocalDate d) {
        return (long) DateTimeUtils.localDateToDays(d);
      }
      return literal instanceof Date d ? (Object) (long) DateTimeUtils.fromJavaDate(d) : null;
    }
    if (type instanceof TimestampNTZType) {
      return literal instanceof LocalDateTime t
          ? (Object) DateTimeUtils.localDateTimeToMicros(t) : null;
    }
    if (type.equals(DataTypes.StringType)) {
      return literal instanceof String s ? UTF8String.fromString(s) : null;
    }
    if (type instanceof BinaryType) {
      return literal instanceof byte[] ? literal : null;
    }
    return null;
  }

  /** Two internal values of one type, ordered as Spark orders them (-0.0 equal to 0.0, NaN
   *  equal to itself and above every number, strings and binaries by unsigned bytes). */
  static int compare(Object a, Object b) {
    if (a instanceof Long x) {
      return Long.compare(x, (Long) b);
    }
    if (a instanceof Double x) {
      double y = (Double) b;
      return x == y ? 0 : Double.compare(x, y);
    }
    if (a instanceof UTF8String x) {
      return x.compareTo((UTF8String) b);
    }
    return Arrays.compareUnsigned((byte[]) a, (byte[]) b);
  }
}
