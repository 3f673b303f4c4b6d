package dev.hprofshrink;

import java.util.ArrayList;
import java.util.List;

/**
 * How to shrink: the options of the CLI's shrink that make sense on a phone. Each setter
 * returns this options object, for chaining. Not thread-safe; a {@link Job} copies what it
 * needs when it is made, so later changes do not reach it.
 */
public final class Options {
    /** Which primitive arrays survive the shrink. */
    public enum Strip {
        /** String values and every live Bitmap buffer, identical buffers kept once (the default). */
        BITMAPS,
        /** What Matrix keeps: String values and one copy of each Bitmap buffer that has a duplicate. */
        DUPLICATES,
        /** String values only. */
        STRINGS,
        /** Nothing dropped: the hprof entry is the input, byte for byte. */
        NONE
    }

    /** How a dropped array disappears. */
    public enum Dropped {
        /** The record goes; references to it dangle (the default). */
        REMOVE,
        /** A zero-length array with the same id and type stays. */
        EMPTY,
        /** The elements are zeroed: sizes stay true. */
        ZERO
    }

    Strip strip = Strip.BITMAPS;
    Dropped dropped = Dropped.REMOVE;
    int level = 6;
    int threads;
    boolean salvage;
    boolean privatePackage;
    String sdkVersion;
    String manufacturer;
    String leakedActivityKey;
    String hprofEntry;
    final List<String> extra = new ArrayList<String>();

    /** The defaults: strip {@link Strip#BITMAPS}, dropped {@link Dropped#REMOVE}, level 6, one thread per core. */
    public Options() {}

    /** What to keep (CLI {@code --strip}). */
    public Options strip(Strip strip) {
        this.strip = nonNull(strip, "strip");
        return this;
    }

    /** How dropped arrays go (CLI {@code --dropped}). */
    public Options dropped(Dropped dropped) {
        this.dropped = nonNull(dropped, "dropped");
        return this;
    }

    /** Deflate level of the package, 0 (store) to 9 (CLI {@code --level}); checked when the job runs. */
    public Options level(int level) {
        this.level = level;
        return this;
    }

    /**
     * Threads to use, the calling one included; 0 (the default) is one per core, at most 256. A
     * phone may want fewer (heat, battery, a foreground app).
     */
    public Options threads(int threads) {
        this.threads = threads;
        return this;
    }

    /**
     * Whether to shrink a dump cut off while being written (the process died mid-dump) up to its
     * last complete record; {@code extra.info} then says {@code truncated=true} (CLI {@code --salvage}).
     */
    public Options salvage(boolean salvage) {
        this.salvage = salvage;
        return this;
    }

    /**
     * Whether the package is private (CLI {@code --private}): every String value but those the
     * analysis reads (LeakCanary's keys and descriptions, Build fields, thread names, framework
     * labels) and every Bitmap's pixels replaced, same lengths, equal values alike; the analysis
     * finds the same leaks and duplicates. {@code result.info} and {@code extra.info} say
     * {@code private=true}. Not with {@link Strip#NONE}. Off by default.
     */
    public Options privatePackage(boolean privatePackage) {
        this.privatePackage = privatePackage;
        return this;
    }

    /** {@code sdkVersion} of {@code result.info}; null (the default): read from the dump. */
    public Options sdkVersion(String sdkVersion) {
        this.sdkVersion = sdkVersion;
        return this;
    }

    /** {@code manufacturer} of {@code result.info}; null (the default): read from the dump. */
    public Options manufacturer(String manufacturer) {
        this.manufacturer = manufacturer;
        return this;
    }

    /** Matrix's {@code leakedActivityKey} of {@code result.info}; null (the default): read from the dump. */
    public Options leakedActivityKey(String key) {
        this.leakedActivityKey = key;
        return this;
    }

    /** Name of the hprof entry in the package; null (the default): the input's stem + {@code _shrink.hprof}. */
    public Options hprofEntry(String name) {
        this.hprofEntry = name;
        return this;
    }

    /** One more {@code key=value} line of {@code extra.info}, after those already given (CLI {@code --extra}). */
    public Options extra(String key, String value) {
        extra.add(nonNull(key, "key"));
        extra.add(nonNull(value, "value"));
        return this;
    }

    static <T> T nonNull(T value, String what) {
        if (value == null) {
            throw new NullPointerException(what + " is null");
        }
        return value;
    }
}
