package acidstore.jvm;

import java.sql.Date;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

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
 * The filters Spark pushes into a scan, evaluated on each planned file's partition values, so
 * that a query never opens the files of partitions it rules out (as Spark's file sources prune
 * partitions). A file is dropped only when a filter is certainly FALSE or NULL for every row of
 * its partition: a filter naming another column, a literal of an unexpected type or anything
 * not modelled here is UNKNOWN and keeps the file. Spark still applies every filter to the rows
 * read, so pruning changes which files are opened, never which rows a query returns.
 */
final class PartitionPruning {
  /** SQL's three truth values, plus UNKNOWN: "could be any of them for this partition". */
  enum Truth { TRUE, FALSE, NULL, UNKNOWN }

  private final Filter[] filters;
  private final List<String> columns;
  private final DataType[] types;

  /** The pushed {@code filters} that name only the table's partition columns. */
  static Filter[] partitionOnly(Filter[] filters, String[] partitionColumns) {
    List<String> names = Arrays.asList(partitionColumns);
    List<Filter> out = new ArrayList<>();
    for (Filter f : filters) {
      if (f.references().length > 0 && Arrays.stream(f.references()).allMatch(names::contains)) {
        out.add(f);
      }
    }
    return out.toArray(new Filter[0]);
  }

  PartitionPruning(Filter[] filters, String[] partitionColumns, StructType schema) {
    this.filters = filters;
    this.columns = Arrays.asList(partitionColumns);
    this.types = new DataType[partitionColumns.length];
    for (int i = 0; i < partitionColumns.length; i++) {
      types[i] = schema.apply(partitionColumns[i]).dataType();
    }
  }

  /** Whether some filter is FALSE or NULL for a file with these partition values. */
  boolean rulesOut(Object[] values) {
    for (Filter f : filters) {
      Truth t = eval(f, values);
      if (t == Truth.FALSE || t == Truth.NULL) {
        return true;
      }
    }
    return false;
  }

  Truth eval(Filter f, Object[] values) {
    if (f instanceof And a) {
      return and(eval(a.left(), values), eval(a.right(), values));
    }
    if (f instanceof Or o) {
      return not(and(not(eval(o.left(), values)), not(eval(o.right(), values))));
    }
    if (f instanceof Not n) {
      return not(eval(n.child(), values));
    }
    if (f instanceof AlwaysTrue) {
      return Truth.TRUE;
    }
    if (f instanceof AlwaysFalse) {
      return Truth.FALSE;
    }
    if (f instanceof IsNull n) {
      int i = columns.indexOf(n.attribute());
      return i < 0 ? Truth.UNKNOWN : truth(values[i] == null);
    }
    if (f instanceof IsNotNull n) {
      int i = columns.indexOf(n.attribute());
      return i < 0 ? Truth.UNKNOWN : truth(values[i] != null);
    }
    if (f instanceof EqualNullSafe e) {
      int i = columns.indexOf(e.attribute());
      if (i < 0) {
        return Truth.UNKNOWN;
      }
      if (values[i] == null || e.value() == null) {
        return truth(values[i] == null && e.value() == null);
      }
      return compared(i, values[i], e.value(), c -> c == 0);
    }
    if (f instanceof EqualTo e) {
      return compare(e.attribute(), values, e.value(), c -> c == 0);
    }
    if (f instanceof GreaterThan g) {
      return compare(g.attribute(), values, g.value(), c -> c > 0);
    }
    if (f instanceof GreaterThanOrEqual g) {
      return compare(g.attribute(), values, g.value(), c -> c >= 0);
    }
    if (f instanceof LessThan l) {
      return compare(l.attribute(), values, l.value(), c -> c < 0);
    }
    if (f instanceof LessThanOrEqual l) {
      return compare(l.attribute(), values, l.value(), c -> c <= 0);
    }
    if (f instanceof In in) {
      return in(in, values);
    }
    if (f instanceof StringStartsWith s) {
      return string(s.attribute(), values, s.value(), (v, p) -> v.startsWith(p));
    }
    if (f instanceof StringEndsWith s) {
      return string(s.attribute(), values, s.value(), (v, p) -> v.endsWith(p));
    }
    if (f instanceof StringContains s) {
      return string(s.attribute(), values, s.value(), (v, p) -> v.contains(p));
    }
    return Truth.UNKNOWN;
  }

  private interface Test {
    boolean holds(int comparison);
  }

  private interface StringTest {
    boolean holds(UTF8String value, UTF8String pattern);
  }

  private Truth compare(String attribute, Object[] values, Object literal, Test test) {
    int i = columns.indexOf(attribute);
    if (i < 0) {
      return Truth.UNKNOWN;
    }
    if (values[i] == null || literal == null) {
      return Truth.NULL;
    }
    return compared(i, values[i], literal, test);
  }

  private Truth compared(int i, Object value, Object literal, Test test) {
    Integer c = compareTo(types[i], value, literal);
    return c == null ? Truth.UNKNOWN : truth(test.holds(c));
  }

  private Truth in(In in, Object[] values) {
    int i = columns.indexOf(in.attribute());
    if (i < 0) {
      return Truth.UNKNOWN;
    }
    if (values[i] == null) {
      return in.values().length == 0 ? Truth.FALSE : Truth.NULL;
    }
    Truth result = Truth.FALSE;
    for (Object literal : in.values()) {
      Truth t = literal == null ? Truth.NULL : compared(i, values[i], literal, c -> c == 0);
      result = not(and(not(result), not(t)));  // result OR t
      if (result == Truth.TRUE) {
        break;
      }
    }
    return result;
  }

  private Truth string(String attribute, Object[] values, String pattern, StringTest test) {
    int i = columns.indexOf(attribute);
    if (i < 0 || !types[i].equals(DataTypes.StringType)) {
      return Truth.UNKNOWN;
    }
    if (values[i] == null || pattern == null) {
      return Truth.NULL;
    }
    return truth(test.holds(UTF8String.fromBytes((byte[]) values[i]),
        UTF8String.fromString(pattern)));
  }

  /**
   * The partition value (Spark's internal form, as {@link Plan} reads it) against a pushed
   * literal (a Java value, as Spark hands filters to sources), or null where this does not
   * know how the two compare: then nothing is pruned.
   */
  static Integer compareTo(DataType type, Object value, Object literal) {
    if (type instanceof ByteType || type instanceof ShortType || type instanceof IntegerType
        || type instanceof LongType) {
      if (literal instanceof Byte || literal instanceof Short || literal instanceof Integer
          || literal instanceof Long) {
        return Long.compare((Long) value, ((Number) literal).longValue());
      }
      return null;
    }
    if (type instanceof BooleanType) {
      return literal instanceof Boolean b ? Long.compare((Long) value, b ? 1 : 0) : null;
    }
    if (type instanceof FloatType || type instanceof DoubleType) {
      if (literal instanceof Double || literal instanceof Float) {
        double a = (Double) value;
        double b = ((Number) literal).doubleValue();
        return a == b ? 0 : Double.compare(a, b);  // -0.0 = 0.0, NaN = NaN and above all, as SQL
      }
      return null;
    }
    if (type instanceof DateType) {
      if (literal instanceof LocalDate d) {
        return Long.compare((Long) value, DateTimeUtils.localDateToDays(d));
      }
      if (literal instanceof Date d) {
        return Long.compare((Long) value, DateTimeUtils.fromJavaDate(d));
      }
      return null;
    }
    if (type instanceof TimestampNTZType) {
      return literal instanceof LocalDateTime t
          ? Long.compare((Long) value, DateTimeUtils.localDateTimeToMicros(t)) : null;
    }
    if (type.equals(DataTypes.StringType)) {
      return literal instanceof String s
          ? UTF8String.fromBytes((byte[]) value).compareTo(UTF8String.fromString(s)) : null;
    }
    if (type instanceof BinaryType) {
      return literal instanceof byte[] b ? Arrays.compareUnsigned((byte[]) value, b) : null;
    }
    return null;
  }

  private static Truth truth(boolean holds) {
    return holds ? Truth.TRUE : Truth.FALSE;
  }

  private static Truth not(Truth t) {
    return switch (t) {
      case TRUE -> Truth.FALSE;
      case FALSE -> Truth.TRUE;
      default -> t;
    };
  }

  /** Kleene's AND, UNKNOWN standing for any of the three. */
  private static Truth and(Truth a, Truth b) {
    if (a == Truth.FALSE || b == Truth.FALSE) {
      return Truth.FALSE;
    }
    if (a == Truth.UNKNOWN || b == Truth.UNKNOWN) {
      return Truth.UNKNOWN;
    }
    if (a == Truth.NULL || b == Truth.NULL) {
      return Truth.NULL;
    }
    return Truth.TRUE;
  }
}
