package acidstore.jvm;

import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.StructType;

/** Column pruning (the row struct's children, ROW__ID only when asked) and the plan's tasks. */
final class AcidScan implements SupportsPushDownRequiredColumns, Scan, Batch {
  private StructType required;
  private final Plan plan;

  AcidScan(StructType schema, Plan plan) {
    this.required = schema;
    this.plan = plan;
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
    return plan.tasks;
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new AcidReaderFactory(required, plan.columns, plan.partitionColumns);
  }
}
