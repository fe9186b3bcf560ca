package acidstore.jvm;

import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The filters Spark pushes into a scan that name only partition columns, evaluated on each
 * planned file's partition values ({@link FilterBounds}, each column a single value), so that a
 * query never opens the files of partitions it rules out, as Spark's file sources prune
 * partitions. A file is dropped only when no row of its partition can satisfy a filter.
 */
final class PartitionPruning {
  private final Filter[] filters;
  private final FilterBounds.Columns columns;

  PartitionPruning(Filter[] filters, String[] partitionColumns, StructType schema) {
    this.filters = filters;
    this.columns = new FilterBounds.Columns(partitionColumns, schema);
  }

  /** Whether no row of a partition with these values (as {@link Plan} reads them) can
   *  satisfy every filter. */
  boolean rulesOut(Object[] values) {
    return !FilterBounds.mayMatch(filters, name -> {
      int i = columns.names.indexOf(name);
      return i < 0 ? null : range(columns.types[i], values[i]);
    });
  }

  /** A plan's partition value (Long, Double or UTF-8 bytes) as {@link FilterBounds} compares
   *  it, or null (nothing known) for a type it does not order. */
  private static FilterBounds.Range range(DataType type, Object value) {
    if (value instanceof byte[] bytes) {
      if (type.equals(DataTypes.StringType)) {
        return FilterBounds.Range.single(type, UTF8String.fromBytes(bytes));
      }
      return type instanceof BinaryType ? FilterBounds.Range.single(type, bytes) : null;
    }
    return FilterBounds.Range.single(type, value);
  }
}
