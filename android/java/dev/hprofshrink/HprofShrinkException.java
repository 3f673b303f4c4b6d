package dev.hprofshrink;

/** Why a shrink failed: its {@link Kind}, a one-line message, and for bad input where in the dump. */
public final class HprofShrinkException extends Exception {
    private static final long serialVersionUID = 1L;

    /** Whose fault. */
    public enum Kind {
        /** {@link Job#cancel()} was called; no output was left. */
        CANCELLED,
        /** An option out of range or contradictory (the message names it); nothing was read or written. */
        INVALID_ARGUMENT,
        /** Reading the input or writing the output failed (missing file, permissions, disk full). */
        IO,
        /** The input is not an HPROF dump this library can shrink: not HPROF, truncated or malformed. */
        BAD_INPUT,
        /** A bug in the library (a panic, caught before it reached Java); the message says where. */
        INTERNAL
    }

    private final Kind kind;
    private final long offset;
    private final int recordTag;
    private final String recordTagName;

    // Made by the native library: kind is Kind's ordinal, -1 for no offset or tag.
    HprofShrinkException(int kind, String message, long offset, int recordTag, String recordTagName) {
        super(message);
        Kind[] kinds = Kind.values();
        this.kind = kind >= 0 && kind < kinds.length ? kinds[kind] : Kind.INTERNAL;
        this.offset = offset;
        this.recordTag = recordTag;
        this.recordTagName = recordTagName;
    }

    HprofShrinkException(Kind kind, String message) {
        this(kind.ordinal(), message, -1, -1, null);
    }

    /** Whose fault. */
    public Kind getKind() {
        return kind;
    }

    /** For bad input, the byte offset in the dump of the damage; -1 when the error names none. */
    public long getOffset() {
        return offset;
    }

    /** For bad input, the tag byte of the record or heap-dump sub-record at {@link #getOffset()}; -1 when none. */
    public int getRecordTag() {
        return recordTag;
    }

    /** The tag with its name, e.g. {@code "0x21 INSTANCE_DUMP"}; null when there is none. */
    public String getRecordTagName() {
        return recordTagName;
    }
}
