package dev.hprofshrink;

/** What a shrink did: the main figures, and the whole report as JSON (the schema of the CLI's {@code --report}). Immutable. */
public final class Report {
    private final String json;
    private final String hprofEntry;
    private final long inputBytes;
    private final long zipBytes;
    private final long hprofBytes;

    // Made by the native library.
    Report(String json, String hprofEntry, long inputBytes, long zipBytes, long hprofBytes) {
        this.json = json;
        this.hprofEntry = hprofEntry;
        this.inputBytes = inputBytes;
        this.zipBytes = zipBytes;
        this.hprofBytes = hprofBytes;
    }

    /** The whole report as JSON (docs/usage.md has its schema). */
    public String getJson() {
        return json;
    }

    /** The name of the hprof entry in the package. */
    public String getHprofEntry() {
        return hprofEntry;
    }

    /** Size of the input dump. */
    public long getInputBytes() {
        return inputBytes;
    }

    /** Size of the package written. */
    public long getZipBytes() {
        return zipBytes;
    }

    /** Size of the shrunk hprof inside the package (uncompressed). */
    public long getHprofBytes() {
        return hprofBytes;
    }

    @Override
    public String toString() {
        return inputBytes + " bytes -> " + zipBytes + " bytes (" + hprofEntry + ")";
    }
}
