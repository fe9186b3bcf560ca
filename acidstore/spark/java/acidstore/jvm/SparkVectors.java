package acidstore.jvm;

import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DecimalColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DoubleColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.TimestampColumnVector;
import org.apache.hadoop.hive.serde2.io.HiveDecimalWritable;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/** Spark column vectors over ORC-Java's vectors (which ORC refills batch after batch). */
final class SparkVectors {
  private SparkVectors() {}

  static Wrapper wrap(DataType type, ColumnVector v, String path) {
    if (v instanceof LongColumnVector && (type instanceof LongType || type instanceof IntegerType
        || type instanceof ShortType || type instanceof ByteType || type instanceof BooleanType
        || type instanceof DateType)) {
      return new Longs(type, (LongColumnVector) v);
    }
    if (v instanceof DoubleColumnVector && (type instanceof DoubleType
        || type instanceof FloatType)) {
      return new Doubles(type, (DoubleColumnVector) v);
    }
    if (v instanceof BytesColumnVector && (type instanceof StringType
        || type instanceof BinaryType)) {
      return new Bytes(type, (BytesColumnVector) v);
    }
    if (v instanceof DecimalColumnVector && type instanceof DecimalType) {
      return new Decimals((DecimalType) type, (DecimalColumnVector) v);
    }
    if (v instanceof TimestampColumnVector && type instanceof TimestampNTZType) {
      return new WallClock(type, (TimestampColumnVector) v);
    }
    throw new UnsupportedOperationException("acidstore_jvm cannot read " + type + " from "
        + v.getClass().getSimpleName() + " in " + path);
  }

  /** A column the file does not have (written before the table's add_columns): all NULL. */
  static Wrapper nulls(DataType type) {
    return new Nulls(type);
  }

  /** A partition column: the value of the file's partition, in Spark's internal form (Long
   *  for integers, booleans, dates and TIMESTAMP_NTZ micros; Double; UTF-8 or binary bytes). */
  static Wrapper constant(DataType type, Object value, String path) {
    if (value == null) {
      return new Nulls(type);
    }
    boolean fits = value instanceof Long ? type instanceof LongType
        || type instanceof IntegerType || type instanceof ShortType || type instanceof ByteType
        || type instanceof BooleanType || type instanceof DateType
        || type instanceof TimestampNTZType
        : value instanceof Double ? type instanceof DoubleType || type instanceof FloatType
        : value instanceof byte[] && (type instanceof StringType || type instanceof BinaryType);
    if (!fits) {
      throw new UnsupportedOperationException("acidstore_jvm cannot return a "
          + value.getClass().getSimpleName() + " partition value as " + type + " for " + path);
    }
    return new Constant(type, value);
  }

  /** ROW__ID as Spark asked for it: the struct, or the fields of it a query names (nested
   *  pruning hands the reader e.g. {@code struct<writeid>} alone). */
  static Wrapper rowId(DataType type, LongColumnVector w, LongColumnVector b,
                       LongColumnVector r) {
    StructType struct = (StructType) type;
    StructField[] fields = struct.fields();
    Wrapper[] children = new Wrapper[fields.length];
    for (int i = 0; i < fields.length; i++) {
      LongColumnVector source;
      switch (fields[i].name()) {
        case "writeid":
          source = w;
          break;
        case "bucketid":
          source = b;
          break;
        case "rowid":
          source = r;
          break;
        default:
          throw new IllegalArgumentException("row__id has no field " + fields[i].name());
      }
      children[i] = new Longs(fields[i].dataType(), source);
    }
    return new RowId(struct, children);
  }

  /** What every wrapper shares: nulls from the ORC vector, no nested types. */
  abstract static class Wrapper extends org.apache.spark.sql.vectorized.ColumnVector {
    private final ColumnVector orc;

    Wrapper(DataType type, ColumnVector orc) {
      super(type);
      this.orc = orc;
    }

    final int at(int row) {
      return orc.isRepeating ? 0 : row;
    }

    @Override
    public void close() {}

    @Override
    public boolean hasNull() {
      return orc != null && !orc.noNulls;
    }

    @Override
    public int numNulls() {
      throw new UnsupportedOperationException("numNulls");
    }

    @Override
    public boolean isNullAt(int row) {
      return orc != null && !orc.noNulls && orc.isNull[at(row)];
    }

    @Override
    public boolean getBoolean(int row) {
      throw new UnsupportedOperationException();
    }

    @Override
    public byte getByte(int row) {
      throw new UnsupportedOperationException();
    }

    @Override
    public short getShort(int row) {
      throw new UnsupportedOperationException();
    }

    @Override
    public int getInt(int row) {
      throw new UnsupportedOperationException();
    }

    @Override
    public long getLong(int row) {
      throw new UnsupportedOperationException();
    }

    @Override
    public float getFloat(int row) {
      throw new UnsupportedOperationException();
    }

    @Override
    public double getDouble(int row) {
      throw new UnsupportedOperationException();
    }

    @Override
    public ColumnarArray getArray(int row) {
      throw new UnsupportedOperationException();
    }

    @Override
    public ColumnarMap getMap(int row) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Decimal getDecimal(int row, int precision, int scale) {
      throw new UnsupportedOperationException();
    }

    @Override
    public UTF8String getUTF8String(int row) {
      throw new UnsupportedOperationException();
    }

    @Override
    public byte[] getBinary(int row) {
      throw new UnsupportedOperationException();
    }

    @Override
    public org.apache.spark.sql.vectorized.ColumnVector getChild(int ordinal) {
      throw new UnsupportedOperationException();
    }
  }

  static final class Longs extends Wrapper {
    private final LongColumnVector v;

    Longs(DataType type, LongColumnVector v) {
      super(type, v);
      this.v = v;
    }

    @Override
    public boolean getBoolean(int row) {
      return v.vector[at(row)] != 0;
    }

    @Override
    public byte getByte(int row) {
      return (byte) v.vector[at(row)];
    }

    @Override
    public short getShort(int row) {
      return (short) v.vector[at(row)];
    }

    @Override
    public int getInt(int row) {
      return (int) v.vector[at(row)];
    }

    @Override
    public long getLong(int row) {
      return v.vector[at(row)];
    }
  }

  static final class Doubles extends Wrapper {
    private final DoubleColumnVector v;

    Doubles(DataType type, DoubleColumnVector v) {
      super(type, v);
      this.v = v;
    }

    @Override
    public float getFloat(int row) {
      return (float) v.vector[at(row)];
    }

    @Override
    public double getDouble(int row) {
      return v.vector[at(row)];
    }
  }

  static final class Bytes extends Wrapper {
    private final BytesColumnVector v;

    Bytes(DataType type, BytesColumnVector v) {
      super(type, v);
      this.v = v;
    }

    @Override
    public UTF8String getUTF8String(int row) {
      int i = at(row);
      return UTF8String.fromBytes(v.vector[i], v.start[i], v.length[i]);
    }

    @Override
    public byte[] getBinary(int row) {
      int i = at(row);
      return java.util.Arrays.copyOfRange(v.vector[i], v.start[i], v.start[i] + v.length[i]);
    }
  }

  /** DECIMAL(p, s): the unscaled long where it fits (p <= 18), else a BigDecimal. */
  static final class Decimals extends Wrapper {
    private final DecimalColumnVector v;
    private final int precision;
    private final int scale;

    Decimals(DecimalType type, DecimalColumnVector v) {
      super(type, v);
      this.v = v;
      this.precision = type.precision();
      this.scale = type.scale();
    }

    @Override
    public Decimal getDecimal(int row, int precision, int scale) {
      HiveDecimalWritable value = v.vector[at(row)];
      if (this.precision <= Decimal.MAX_LONG_DIGITS()) {
        return Decimal.createUnsafe(value.serialize64(this.scale), this.precision, this.scale);
      }
      return Decimal.apply(value.getHiveDecimal().bigDecimalValue().setScale(this.scale),
                           this.precision, this.scale);
    }
  }

  /** Hive's zone-less TIMESTAMP (read with useUTCTimestamp) as Spark's TIMESTAMP_NTZ micros. */
  static final class WallClock extends Wrapper {
    private final TimestampColumnVector v;

    WallClock(DataType type, TimestampColumnVector v) {
      super(type, v);
      this.v = v;
    }

    @Override
    public long getLong(int row) {
      int i = at(row);
      return Math.floorDiv(v.time[i], 1000L) * 1_000_000L + v.nanos[i] / 1000;
    }
  }

  /** Every row NULL. */
  static final class Nulls extends Wrapper {
    Nulls(DataType type) {
      super(type, null);
    }

    @Override
    public boolean hasNull() {
      return true;
    }

    @Override
    public boolean isNullAt(int row) {
      return true;
    }
  }

  /** One value in every row (a partition column). */
  static final class Constant extends Wrapper {
    private final long integral;
    private final double real;
    private final byte[] bytes;
    private final UTF8String text;

    Constant(DataType type, Object value) {
      super(type, null);
      integral = value instanceof Long ? (Long) value : 0;
      real = value instanceof Double ? (Double) value : 0;
      bytes = value instanceof byte[] ? (byte[]) value : null;
      text = bytes != null ? UTF8String.fromBytes(bytes) : null;
    }

    @Override
    public boolean isNullAt(int row) {
      return false;
    }

    @Override
    public boolean getBoolean(int row) {
      return integral != 0;
    }

    @Override
    public byte getByte(int row) {
      return (byte) integral;
    }

    @Override
    public short getShort(int row) {
      return (short) integral;
    }

    @Override
    public int getInt(int row) {
      return (int) integral;
    }

    @Override
    public long getLong(int row) {
      return integral;
    }

    @Override
    public float getFloat(int row) {
      return (float) real;
    }

    @Override
    public double getDouble(int row) {
      return real;
    }

    @Override
    public UTF8String getUTF8String(int row) {
      return text;
    }

    @Override
    public byte[] getBinary(int row) {
      return bytes;
    }
  }

  /** ROW__ID as struct(writeid, bucketid, rowid) over the three key vectors. */
  static final class RowId extends Wrapper {
    private final Wrapper[] children;

    RowId(StructType type, Wrapper[] children) {
      super(type, null);
      this.children = children;
    }

    @Override
    public org.apache.spark.sql.vectorized.ColumnVector getChild(int ordinal) {
      return children[ordinal];
    }
  }
}
