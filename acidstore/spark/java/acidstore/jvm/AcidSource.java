package acidstore.jvm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A DataSource V2 reader of Hive ACID event files planned by acidstore's Python driver
 * ({@code acidstore/spark/jvm_read.py}). The driver picks the snapshot's files and the delete
 * events that apply to each, writes them to a plan file (option "plan", see {@link Plan}) and
 * passes the table's Spark schema (given to the reader, or as JSON in option "schema"); this side only decodes and drops
 * deleted rows. The plan is read once, when the DataFrame is made: the driver deletes the file
 * right after, and every action on the DataFrame reads the same snapshot.
 */
public final class AcidSource implements TableProvider {
  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    return (StructType) DataType.fromJson(options.get("schema"));
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> props) {
    String plan = props.get("plan");
    try {
      return new AcidTable(schema, plan, Plan.read(plan));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the acidstore plan " + plan, e);
    }
  }

  /** The planned snapshot as a readable table. */
  static final class AcidTable implements Table, SupportsRead {
    private final StructType schema;
    private final String plan;
    private final Plan planned;

    AcidTable(StructType schema, String plan, Plan planned) {
      this.schema = schema;
      this.plan = plan;
      this.planned = planned;
    }

    @Override
    public String name() {
      return "acidstore_jvm(" + plan.substring(plan.lastIndexOf('/') + 1) + ")";
    }

    @Override
    public StructType schema() {
      return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      return new AcidScan(schema, planned);
    }
  }
}
