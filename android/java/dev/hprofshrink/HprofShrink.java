package dev.hprofshrink;

import java.io.File;

/**
 * Shrinks Java/Android heap dumps (HPROF) into the upload package {@code serve} takes, on the
 * calling thread, through the native library {@code libhprof_shrink_jni.so}.
 *
 * <pre>{@code
 * Report r = HprofShrink.shrink(dump, zip, new Options().extra("appVersion", "1.4.2"));
 * new Outbox(queueDir).add(zip);
 * }</pre>
 *
 * <p>For progress or cancellation make a {@link Job} instead. Every method here may be called
 * from any thread; a shrink blocks its thread for the whole work (seconds per GB), so call it
 * off the main thread. Arguments are never null unless said so.
 */
public final class HprofShrink {
    private HprofShrink() {}

    /**
     * Shrinks {@code input} into the package {@code output} (a zip). The input is never written
     * to; the output appears only complete (written under a temporary name beside it, then
     * renamed), and on any failure no output is left.
     *
     * @param input the heap dump ({@code Debug.dumpHprofData}, {@code am dumpheap}, a JVM's)
     * @param output where the package goes
     * @param options how; {@code new Options()} for the defaults
     * @return what was kept and dropped
     * @throws HprofShrinkException with {@link HprofShrinkException#getKind()} saying why
     */
    public static Report shrink(File input, File output, Options options)
            throws HprofShrinkException {
        return new Job(input, output, options).run(null);
    }

    /** The version of the native library, e.g. {@code "0.1.0"}. */
    public static String version() {
        NativeLibrary.load();
        return Job.nativeVersion();
    }
}
