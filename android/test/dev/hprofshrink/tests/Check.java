package dev.hprofshrink.tests;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;

/** Assertions, and the paths the script gives (system properties). */
final class Check {
    private Check() {}

    static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static void equal(Object want, Object have, String what) {
        if (!Objects.equals(want, have)) {
            throw new AssertionError(what + ": want <" + want + ">, have <" + have + ">");
        }
    }

    interface Body {
        void run() throws Exception;
    }

    /** Runs {@code body}, which must throw a {@code type}; returns it. */
    static <T extends Throwable> T throwsA(Class<T> type, Body body) {
        try {
            body.run();
        } catch (Throwable t) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
            throw new AssertionError("want " + type.getSimpleName() + ", got " + t, t);
        }
        throw new AssertionError("want " + type.getSimpleName() + ", nothing was thrown");
    }

    static String property(String name) {
        String v = System.getProperty(name);
        if (v == null) {
            throw new IllegalStateException("-D" + name + " is not set (scripts/java-test.sh sets it)");
        }
        return v;
    }

    /** The repository's fixtures/ directory. */
    static File fixture(String name) {
        return new File(property("hprofshrink.fixtures"), name);
    }

    /** The hprof-shrink binary of this workspace. */
    static String cli() {
        return property("hprofshrink.cli");
    }

    static Path tempDir() throws IOException {
        return Files.createTempDirectory("hprof-shrink-java-test");
    }

    /** The names in {@code dir}, sorted. */
    static String[] names(Path dir) {
        String[] n = dir.toFile().list();
        if (n == null) {
            return new String[0];
        }
        Arrays.sort(n);
        return n;
    }

    /** Deletes a tree. */
    static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (var s = Files.walk(p)) {
            s.sorted((a, b) -> b.getNameCount() - a.getNameCount()).forEach(q -> q.toFile().delete());
        }
    }

    /** Runs a command, returns its exit code; its output goes to ours. */
    static int run(String... command) throws IOException, InterruptedException {
        return new ProcessBuilder(command).inheritIO().start().waitFor();
    }
}
