package dev.hprofshrink;

/**
 * Progress of a {@link Job}. Called on the thread that called {@link Job#run}, never on
 * another and never concurrently with itself, every 4 MiB of input that thread walks and at
 * the end of each stage (a short stage may go unreported). It may call {@link Job#cancel()}.
 * What it throws cancels the job, and {@link Job#run} then throws it.
 */
public interface ProgressListener {
    /**
     * @param stage the stage under way
     * @param done bytes of the input done in this stage
     * @param total bytes of the input this stage walks
     */
    void onProgress(Stage stage, long done, long total);
}
