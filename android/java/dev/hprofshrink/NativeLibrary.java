package dev.hprofshrink;

/** Loads {@code libhprof_shrink_jni.so} once, from the app's (or {@code java.library.path}'s) libraries. */
final class NativeLibrary {
    private NativeLibrary() {}

    static final String NAME = "hprof_shrink_jni";

    private static boolean loaded;

    static synchronized void load() {
        if (!loaded) {
            System.loadLibrary(NAME);
            loaded = true;
        }
    }
}
