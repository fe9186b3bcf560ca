package acidstore.jvm;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Columnar readers only: Spark converts to rows where a plan needs rows. */
final class AcidReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;
  private final StructType required;
  private final String[] columns;
  private final String[] partitionColumns;
  private final StripeSkipping skipping;

  AcidReaderFactory(StructType required, String[] columns, String[] partitionColumns,
                    StripeSkipping skipping) {
    this.required = required;
    this.columns = columns;
    this.partitionColumns = partitionColumns;
    this.skipping = skipping;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return true;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    throw new UnsupportedOperationException("acidstore_jvm reads columnar batches only");
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return new AcidBatchReader((Plan.Task) partition, required, columns, partitionColumns,
        skipping);
  }
}
