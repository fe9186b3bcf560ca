package acidstore.jvm;

import java.io.IOException;
import java.io.UncheckedIOException;

import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.StructType;

/** Column pruning (the row struct's children, ROW__ID only when asked) and the plan's tasks. */
final class AcidScan implements SupportsPushDownRequiredColumns, Scan, Batch {
  private StructType required;
  private final String plan;
  private final String[] userColumns;

  AcidScan(StructType schema, String plan, String[] userColumns) {
    this.required = schema;
    this.plan = plan;
    this.userColumns = userColumns;
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    this.required = requiredSchema;
  }

  @Override
  public Scan build() {
    return this;
  }

  @Override
  public StructType readSchema() {
    return required;
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    try {
      return Plan.read(plan);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the acidstore plan " + plan, e);
    }
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new AcidReaderFactory(required, userColumns);
  }
}
