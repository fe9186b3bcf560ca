package acidstore.jvm;

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
 * Spike (issue 11): a DataSource V2 reader of Hive ACID event files planned by acidstore's
 * Python driver. The driver picks the snapshot's files and the delete events that apply to
 * each, writes them to a plan file (option "plan", see {@link Plan}) and passes the table's
 * Spark schema as JSON (option "schema"); this side only decodes and drops deleted rows.
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
    return new AcidTable(schema, props.get("plan"), props.get("columns"));
  }

  /** The planned snapshot as a readable table. */
  static final class AcidTable implements Table, SupportsRead {
    private final StructType schema;
    private final String plan;
    private final String userColumns;

    AcidTable(StructType schema, String plan, String userColumns) {
      this.schema = schema;
      this.plan = plan;
      this.userColumns = userColumns;
    }

    @Override
    public String name() {
      return "acidstore_jvm(" + plan + ")";
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
      return new AcidScan(schema, plan, userColumns.split(","));
    }
  }
}
