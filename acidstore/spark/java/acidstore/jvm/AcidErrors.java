package acidstore.jvm;

import java.io.FileNotFoundException;
import java.io.IOException;

import org.apache.orc.FileFormatException;

/**
 * A read's failures named by acidstore's Python error classes. A failed task reaches the
 * driver as text only, so the message starts with the class's qualified name, as a failing
 * Python worker's traceback ends with it: {@code acidstore.spark.typed_errors.typed_error} then
 * finds the same typed error, naming the file, whichever reader failed.
 */
final class AcidErrors {
  private AcidErrors() {
  }

  /** Stored events break the format's promises (order, counts): Python's DataError. */
  static IOException data(String message) {
    return named("DataError", message, null);
  }

  /** A file that cannot be decoded as what the plan says it is: CorruptFileError. */
  static IOException corrupt(String message) {
    return named("CorruptFileError", message, null);
  }

  /**
   * What opening a planned file failed with, named: a file gone since the driver planned the
   * read is MissingDataError (the snapshot needs it), one that is not ORC CorruptFileError;
   * any other failure (the filesystem's) stays as it is.
   */
  static IOException opening(String path, IOException e) {
    if (e instanceof FileNotFoundException) {
      return named("MissingDataError", path + " is gone: a file of the snapshot was removed "
          + "after the read was planned", e);
    }
    if (e instanceof FileFormatException) {
      return named("CorruptFileError", "cannot open ORC file " + path + ": " + e.getMessage(), e);
    }
    return e;
  }

  private static IOException named(String error, String message, Throwable cause) {
    return new IOException("acidstore.errors." + error + ": " + message, cause);
  }
}
