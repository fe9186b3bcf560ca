package acidstore.jvm;

import java.io.IOException;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

import org.apache.spark.sql.connector.read.InputPartition;

/**
 * The plan file the Python driver writes ({@code jvm_read._plan_bytes}, big-endian): magic
 * "ACJ2"; the table's columns (count, then each name as int length + UTF-8) and its partition
 * columns (the same); the task count; per task its file count and per file: path, file length
 * (long), first and stop stripe (int, -1 = all), the events the file must hold (long, -1 = no
 * record), its partition's values (one per partition column: a tag byte, 0 NULL, 1 long,
 * 2 double, 3 bytes as int length + bytes, each in Spark's internal form), then the delete
 * count n and n writeIds (long), n bucket properties (int) and n rowIds (long), sorted by
 * (writeId, bucket, rowId) as the file's rows are.
 */
final class Plan {
  private static final int MAGIC = 0x41434a32;

  /** The table's columns, in the order of the files' {@code row} struct. */
  final String[] columns;
  /** The table's partition columns, in the order of each file's partition values. */
  final String[] partitionColumns;
  final Task[] tasks;

  private Plan(String[] columns, String[] partitionColumns, Task[] tasks) {
    this.columns = columns;
    this.partitionColumns = partitionColumns;
    this.tasks = tasks;
  }

  /** One event file to read and the deleted ROW__IDs among its rows. */
  static final class FileTask implements Serializable {
    private static final long serialVersionUID = 2L;
    final String path;
    final long length;
    final int firstStripe;
    final int stopStripe;
    final long expectedRows;
    /** Long, Double, byte[] or null per partition column */
    final Object[] partitionValues;
    final long[] deletedWriteIds;
    final int[] deletedBuckets;
    final long[] deletedRowIds;

    FileTask(String path, long length, int firstStripe, int stopStripe, long expectedRows,
             Object[] partitionValues, long[] w, int[] b, long[] r) {
      this.path = path;
      this.length = length;
      this.firstStripe = firstStripe;
      this.stopStripe = stopStripe;
      this.expectedRows = expectedRows;
      this.partitionValues = partitionValues;
      this.deletedWriteIds = w;
      this.deletedBuckets = b;
      this.deletedRowIds = r;
    }
  }

  /** One Spark task: files read one after another. */
  static final class Task implements InputPartition {
    private static final long serialVersionUID = 2L;
    final FileTask[] files;

    Task(FileTask[] files) {
      this.files = files;
    }
  }

  private static String string(ByteBuffer in) {
    byte[] bytes = new byte[in.getInt()];
    in.get(bytes);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  private static String[] strings(ByteBuffer in) {
    String[] out = new String[in.getInt()];
    for (int i = 0; i < out.length; i++) {
      out[i] = string(in);
    }
    return out;
  }

  private static Object value(ByteBuffer in, String path) throws IOException {
    byte tag = in.get();
    switch (tag) {
      case 0:
        return null;
      case 1:
        return in.getLong();
      case 2:
        return in.getDouble();
      case 3:
        byte[] bytes = new byte[in.getInt()];
        in.get(bytes);
        return bytes;
      default:
        throw new IOException("bad partition value tag " + tag + " in the acidstore plan " + path);
    }
  }

  /** Reads the whole plan at once; the key arrays are bulk copies (a per-value
   *  DataInputStream loop took 0.1-0.2 s for 200,000 keys). */
  static Plan read(String path) throws IOException {
    ByteBuffer in = ByteBuffer.wrap(Files.readAllBytes(Paths.get(path)));
    if (in.getInt() != MAGIC) {
      throw new IOException("not an acidstore plan of this version: " + path);
    }
    String[] columns = strings(in);
    String[] partitionColumns = strings(in);
    Task[] tasks = new Task[in.getInt()];
    for (int t = 0; t < tasks.length; t++) {
      FileTask[] files = new FileTask[in.getInt()];
      for (int f = 0; f < files.length; f++) {
        String name = string(in);
        long length = in.getLong();
        int first = in.getInt();
        int stop = in.getInt();
        long expected = in.getLong();
        Object[] values = new Object[partitionColumns.length];
        for (int p = 0; p < values.length; p++) {
          values[p] = value(in, path);
        }
        int n = in.getInt();
        long[] w = new long[n];
        int[] b = new int[n];
        long[] r = new long[n];
        in.asLongBuffer().get(w);
        in.position(in.position() + 8 * n);
        in.asIntBuffer().get(b);
        in.position(in.position() + 4 * n);
        in.asLongBuffer().get(r);
        in.position(in.position() + 8 * n);
        files[f] = new FileTask(name, length, first, stop, expected, values, w, b, r);
      }
      tasks[t] = new Task(files);
    }
    if (in.hasRemaining()) {
      throw new IOException("trailing bytes in the acidstore plan " + path);
    }
    return new Plan(columns, partitionColumns, tasks);
  }
}
