package dev.hprofshrink;

import java.io.File;

/**
 * One shrink that can be cancelled and reports progress. Make it, call {@link #run} once on a
 * worker thread, and call {@link #cancel()} from any thread meanwhile (or before: the run then
 * fails at once).
 *
 * <pre>{@code
 * Job job = new Job(dump, zip, new Options());
 * // elsewhere, e.g. when the app comes to the foreground: job.cancel();
 * Report r = job.run((stage, done, total) -> log(stage + " " + done + "/" + total));
 * }</pre>
 *
 * <p>Thread-safe: {@link #cancel()} and {@link #isCancelled()} may be called from any thread
 * at any time, {@link #run} from one.
 */
public final class Job {
    // Read by the native library (crates/jni/src/request.rs), by these names.
    private final String input;
    private final String output;
    private final int strip;
    private final int dropped;
    private final int level;
    private final int threads;
    private final boolean salvage;
    private final boolean privatePackage;
    private final String sdkVersion;
    private final String manufacturer;
    private final String leakedActivityKey;
    private final String hprofEntry;
    private final String[] extra;

    private final Object lock = new Object();
    /** The native cancellation flag while a run is under way, else 0; guarded by lock. */
    private long handle;
    private boolean started;
    private volatile boolean cancelled;
    private ProgressListener listener;
    private Throwable listenerFailure;

    /**
     * A shrink of {@code input} into the package {@code output}, with a copy of {@code options}.
     * Loads the native library if needed.
     */
    public Job(File input, File output, Options options) {
        NativeLibrary.load();
        this.input = Options.nonNull(input, "input").getPath();
        this.output = Options.nonNull(output, "output").getPath();
        Options o = Options.nonNull(options, "options");
        this.strip = o.strip.ordinal();
        this.dropped = o.dropped.ordinal();
        this.level = o.level;
        this.threads = o.threads;
        this.salvage = o.salvage;
        this.privatePackage = o.privatePackage;
        this.sdkVersion = o.sdkVersion;
        this.manufacturer = o.manufacturer;
        this.leakedActivityKey = o.leakedActivityKey;
        this.hprofEntry = o.hprofEntry;
        this.extra = o.extra.toArray(new String[0]);
    }

    /**
     * Does the shrink on this thread. Once per job.
     *
     * @param listener progress reports, on this thread (see {@link ProgressListener}); may be null
     * @return what the shrink did
     * @throws HprofShrinkException why it failed; {@link HprofShrinkException.Kind#CANCELLED}
     *     when cancelled. No output is left on any failure.
     * @throws IllegalStateException when the job has run already
     */
    public Report run(ProgressListener listener) throws HprofShrinkException {
        synchronized (lock) {
            if (started) {
                throw new IllegalStateException("a job runs once; make a new Job");
            }
            started = true;
            if (cancelled) {
                throw new HprofShrinkException(HprofShrinkException.Kind.CANCELLED, "cancelled before it started");
            }
            handle = nativeNew();
        }
        this.listener = listener;
        try {
            Report report = nativeRun(handle);
            if (listenerFailure != null) {
                // The cancel came after the last check: the shrink finished, but the caller
                // is told what the listener threw, and no output is left, as documented.
                new File(output).delete();
                rethrowListenerFailure();
            }
            return report;
        } catch (HprofShrinkException e) {
            rethrowListenerFailure();
            throw e;
        } finally {
            synchronized (lock) {
                nativeFree(handle);
                handle = 0;
            }
        }
    }

    /**
     * Asks the job to stop: a run under way fails with {@link HprofShrinkException.Kind#CANCELLED}
     * within a few MiB of input and leaves no output; a run not yet started fails at once. Any
     * thread, any time, also from the listener.
     */
    public void cancel() {
        synchronized (lock) {
            cancelled = true;
            if (handle != 0) {
                nativeCancel(handle);
            }
        }
    }

    /** Whether {@link #cancel()} was called (or the listener threw). */
    public boolean isCancelled() {
        return cancelled;
    }

    // Called by the native library on the thread of run, with Stage's ordinal.
    private void progress(int stage, long done, long total) {
        ProgressListener l = listener;
        if (l == null || listenerFailure != null) {
            return;
        }
        try {
            Stage[] stages = Stage.values();
            l.onProgress(stages[Math.min(Math.max(stage, 0), stages.length - 1)], done, total);
        } catch (Throwable t) {
            listenerFailure = t;
            cancel();
        }
    }

    private void rethrowListenerFailure() {
        Throwable t = listenerFailure;
        if (t instanceof RuntimeException) {
            throw (RuntimeException) t;
        }
        if (t instanceof Error) {
            throw (Error) t;
        }
    }

    static native String nativeVersion();

    private static native long nativeNew();

    private static native void nativeCancel(long handle);

    private static native void nativeFree(long handle);

    private native Report nativeRun(long handle) throws HprofShrinkException;
}
