package dev.hprofshrink;

/** The stage of a shrink a progress report belongs to; {@code done} and {@code total} count bytes of the input. */
public enum Stage {
    /** Pass 1: strings, classes and field layouts. */
    INFO,
    /** Pass 2: String values and Bitmap buffers to keep. */
    COLLECT,
    /** Pass 2 again, over the part of the file before a late reference, when needed. */
    RESOLVE,
    /** Pass 2: hashing Bitmap buffers of equal length (bytes hashed). */
    DEDUP,
    /** Pass 3: writing the shrunk dump into the package. */
    WRITE,
    /** Reading a dump to inspect or verify it (a shrink does not report it). */
    READ
}
