package acidstore.jvm;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;

/**
 * Column pruning (the row struct's children, ROW__ID only when asked), partition pruning by
 * the query's filters on partition columns ({@link PartitionPruning}), stripe skipping by its
 * filters on the rows' columns ({@link StripeSkipping}, in the tasks), and the plan's tasks.
 * Spark makes one of these per query (a {@code newScanBuilder} call), so the filters pushed
 * here belong to this query alone.
 */
final class AcidScan implements SupportsPushDownRequiredColumns, SupportsPushDownFilters, Scan,
    Batch {
  private StructType required;
  private final StructType schema;
  private final Plan plan;
  /** the pushed filters naming only partition columns, and only the rows' columns */
  private Filter[] pruning = new Filter[0];
  private Filter[] skipping = new Filter[0];

  AcidScan(StructType schema, Plan plan) {
    this.required = schema;
    this.schema = schema;
    this.plan = plan;
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    this.required = requiredSchema;
  }

  /** Keeps the filters on partition columns for pruning and those on the rows' columns for
   *  skipping stripes; every filter is still Spark's to apply to the rows read (all are
   *  returned). */
  @Override
  public Filter[] pushFilters(Filter[] filters) {
    pruning = FilterBounds.naming(filters, plan.partitionColumns);
    skipping = FilterBounds.naming(filters, plan.columns);
    return filters;
  }

  @Override
  public Filter[] pushedFilters() {
    Filter[] both = Arrays.copyOf(pruning, pruning.length + skipping.length);
    System.arraycopy(skipping, 0, both, pruning.length, skipping.length);
    return both;
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
  public String description() {
    return "acidstore_jvm" + listed(" partition filters: ", pruning)
        + listed(" stripe filters: ", skipping);
  }

  private static String listed(String what, Filter[] filters) {
    return filters.length == 0 ? "" : what
        + Arrays.stream(filters).map(Filter::toString).collect(Collectors.joining(", "));
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  /** The plan's tasks without the files of partitions the pushed filters rule out (a task
   *  left with none is dropped). */
  @Override
  public InputPartition[] planInputPartitions() {
    if (pruning.length == 0) {
      return plan.tasks;
    }
    PartitionPruning prune = new PartitionPruning(pruning, plan.partitionColumns, schema);
    List<InputPartition> out = new ArrayList<>();
    for (Plan.Task task : plan.tasks) {
      Plan.FileTask[] kept = Arrays.stream(task.files)
          .filter(f -> !prune.rulesOut(f.partitionValues)).toArray(Plan.FileTask[]::new);
      if (kept.length == task.files.length) {
        out.add(task);
      } else if (kept.length > 0) {
        out.add(new Plan.Task(kept));
      }
    }
    return out.toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new AcidReaderFactory(required, plan.columns, plan.partitionColumns,
        skipping.length == 0 ? null : new StripeSkipping(skipping, plan.columns, schema));
  }
}
