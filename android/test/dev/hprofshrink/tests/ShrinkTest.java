package dev.hprofshrink.tests;

import static dev.hprofshrink.tests.Check.check;
import static dev.hprofshrink.tests.Check.equal;

import dev.hprofshrink.HprofShrink;
import dev.hprofshrink.HprofShrinkException;
import dev.hprofshrink.Job;
import dev.hprofshrink.Options;
import dev.hprofshrink.Report;
import dev.hprofshrink.Stage;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/** The Java API over the JNI library, against the CLI of the same workspace. */
public final class ShrinkTest implements AutoCloseable {
    private final Path dir = Check.tempDir();

    public ShrinkTest() throws Exception {}

    @Override
    public void close() throws java.io.IOException {
        Check.deleteTree(dir);
    }

    /** Every option the Java API has, through Java and through the CLI: the same package, byte for byte. */
    public void testPackageIsTheClisByteForByte() throws Exception {
        File input = Check.fixture("art-api25.hprof");
        byte[] before = Files.readAllBytes(input.toPath());
        long mtime = input.lastModified();
        File javaZip = dir.resolve("java.zip").toFile();
        File cliZip = dir.resolve("cli.zip").toFile();
        Options o = new Options().strip(Options.Strip.DUPLICATES).dropped(Options.Dropped.ZERO).level(1)
                .sdkVersion("33").manufacturer("ACME").leakedActivityKey("key-1").hprofEntry("dump.hprof")
                .extra("appVersion", "1.4.2").extra("uin", "").threads(2);
        Report r = HprofShrink.shrink(input, javaZip, o);
        equal(0, Check.run(Check.cli(), input.getPath(), cliZip.getPath(), "--strip", "duplicates",
                "--dropped", "zero", "--level", "1", "--sdk-version", "33", "--manufacturer", "ACME",
                "--leaked-activity-key", "key-1", "--hprof-entry", "dump.hprof", "--extra", "appVersion=1.4.2",
                "--extra", "uin=", "--threads", "2", "-q"), "the CLI's exit code");
        check(Arrays.equals(Files.readAllBytes(cliZip.toPath()), Files.readAllBytes(javaZip.toPath())),
                "the Java package equals the CLI's byte for byte");
        equal(javaZip.length(), r.getZipBytes(), "report: zip bytes");
        equal(input.length(), r.getInputBytes(), "report: input bytes");
        equal("dump.hprof", r.getHprofEntry(), "report: hprof entry");
        check(r.getJson().contains("\"schema\"") && r.getJson().contains("\"ACME\""), "the report's JSON: " + r.getJson());
        check(Arrays.equals(before, Files.readAllBytes(input.toPath())) && input.lastModified() == mtime,
                "the input is untouched");
        check(HprofShrink.version().matches("\\d+\\.\\d+\\.\\d+.*"), "version " + HprofShrink.version());
    }

    /** A private package: its extra.info says so, and the CLI's verify holds it to its dump. */
    public void testPrivatePackageVerifiesAgainstItsDump() throws Exception {
        File input = Check.fixture("art-leaks.hprof");
        File zip = dir.resolve("private.zip").toFile();
        Report r = HprofShrink.shrink(input, zip, new Options().privatePackage(true));
        check(r.getJson().contains("\"private\":true"), "the report says private: " + r.getJson());
        String extra;
        try (java.util.zip.ZipFile z = new java.util.zip.ZipFile(zip)) {
            extra = new String(z.getInputStream(z.getEntry("extra.info")).readAllBytes(), "UTF-8");
        }
        check(extra.contains("private=true"), "extra.info: " + extra);
        equal(0, Check.run(Check.cli(), "verify", zip.getPath(), "--against", input.getPath()),
                "verify --against of the private package");
        HprofShrinkException e = null;
        try {
            HprofShrink.shrink(input, dir.resolve("none.zip").toFile(),
                    new Options().privatePackage(true).strip(Options.Strip.NONE));
        } catch (HprofShrinkException x) {
            e = x;
        }
        check(e != null && e.getMessage().contains("--private"), "private with strip NONE is refused: " + e);
    }

    /** The listener runs on the thread of run only, in stage order, with done within total. */
    public void testProgressComesOnTheRunningThread() throws Exception {
        List<Stage> stages = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        Job job = new Job(Check.fixture("hotspot-android.hprof"), dir.resolve("out.zip").toFile(),
                new Options().threads(4));
        job.run((stage, done, total) -> {
            check(done >= 0 && done <= total, stage + " " + done + "/" + total);
            threads.add(Thread.currentThread());
            if (stages.isEmpty() || stages.get(stages.size() - 1) != stage) {
                stages.add(stage);
            }
        });
        check(!threads.isEmpty(), "progress was reported");
        for (Thread t : threads) {
            check(t == Thread.currentThread(), "reported on " + t.getName());
        }
        check(stages.contains(Stage.INFO) && stages.contains(Stage.WRITE), "stages " + stages);
        for (int i = 1; i < stages.size(); i++) {
            check(stages.get(i - 1).ordinal() < stages.get(i).ordinal(), "stages in order: " + stages);
        }
    }

    /**
     * Cancelled from a second thread while it writes: the temporary output was there, and
     * afterwards nothing is; the job stays cancelled.
     */
    public void testCancelFromAnotherThreadMidWrite() throws Exception {
        File zip = dir.resolve("cancelled.zip").toFile();
        Job job = new Job(Check.fixture("hotspot-android.hprof"), zip, new Options());
        CountDownLatch asked = new CountDownLatch(1);
        CountDownLatch cancelled = new CountDownLatch(1);
        AtomicReference<String[]> seen = new AtomicReference<>();
        Thread canceller = new Thread(() -> {
            try {
                asked.await();
                job.cancel();
                cancelled.countDown();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        canceller.start();
        HprofShrinkException e = Check.throwsA(HprofShrinkException.class, () -> job.run((stage, done, total) -> {
            if (stage == Stage.WRITE && seen.get() == null) {
                seen.set(Check.names(dir));
                asked.countDown();
                try {
                    check(cancelled.await(30, TimeUnit.SECONDS), "the other thread cancelled");
                } catch (InterruptedException x) {
                    throw new IllegalStateException(x);
                }
            }
        }));
        canceller.join();
        equal(HprofShrinkException.Kind.CANCELLED, e.getKind(), "kind (" + e.getMessage() + ")");
        check(seen.get() != null && seen.get().length == 1 && seen.get()[0].endsWith(".hprof-shrink-tmp"),
                "while writing, the output was a temporary file: " + Arrays.toString(seen.get()));
        equal(0, Check.names(dir).length, "files left: " + Arrays.toString(Check.names(dir)));
        check(job.isCancelled(), "the job says it was cancelled");
        Check.throwsA(IllegalStateException.class, () -> job.run(null));
    }

    /** A job cancelled before it runs fails at once and creates nothing. */
    public void testCancelBeforeTheRun() throws Exception {
        Job job = new Job(Check.fixture("art-api25.hprof"), dir.resolve("x.zip").toFile(), new Options());
        job.cancel();
        HprofShrinkException e = Check.throwsA(HprofShrinkException.class, () -> job.run(null));
        equal(HprofShrinkException.Kind.CANCELLED, e.getKind(), "kind");
        equal(0, Check.names(dir).length, "no file");
    }

    /** A dump cut off mid-record: BAD_INPUT with the offset and record tag, the input untouched, no output. */
    public void testBadInputNamesOffsetAndTag() throws Exception {
        byte[] whole = Files.readAllBytes(Check.fixture("art-api25.hprof").toPath());
        Path cut = dir.resolve("cut.hprof");
        Files.write(cut, Arrays.copyOf(whole, 100_000));
        File zip = dir.resolve("cut.zip").toFile();
        HprofShrinkException e = Check.throwsA(HprofShrinkException.class,
                () -> HprofShrink.shrink(cut.toFile(), zip, new Options()));
        equal(HprofShrinkException.Kind.BAD_INPUT, e.getKind(), "kind (" + e.getMessage() + ")");
        check(e.getOffset() > 0 && e.getOffset() < 100_000, "offset " + e.getOffset());
        check(e.getRecordTag() >= 0 && e.getRecordTagName() != null
                && e.getRecordTagName().startsWith(String.format("0x%02X", e.getRecordTag())),
                "tag " + e.getRecordTag() + " " + e.getRecordTagName());
        check(e.getMessage().contains(cut.toString()) && e.getMessage().contains("offset " + e.getOffset()),
                "the message names the file and the offset: " + e.getMessage());
        check(!zip.exists(), "no output");
        equal(100_000L, Files.size(cut), "the input is untouched");

        Path notHprof = dir.resolve("text.hprof");
        Files.write(notHprof, "hello".getBytes("UTF-8"));
        HprofShrinkException n = Check.throwsA(HprofShrinkException.class,
                () -> HprofShrink.shrink(notHprof.toFile(), zip, new Options()));
        equal(HprofShrinkException.Kind.BAD_INPUT, n.getKind(), "kind of a text file");
        equal(-1L, n.getOffset(), "no offset for a file that is not HPROF");
    }

    /** Out-of-range options are INVALID_ARGUMENT; a missing input is IO; neither leaves a file. */
    public void testInvalidOptionsAndMissingInput() throws Exception {
        File zip = dir.resolve("x.zip").toFile();
        File input = Check.fixture("art-api25.hprof");
        for (Options o : new Options[] {new Options().level(10), new Options().level(-1), new Options().threads(257),
                new Options().hprofEntry("a/b"), new Options().extra("", "v")}) {
            HprofShrinkException e = Check.throwsA(HprofShrinkException.class, () -> HprofShrink.shrink(input, zip, o));
            equal(HprofShrinkException.Kind.INVALID_ARGUMENT, e.getKind(), "kind (" + e.getMessage() + ")");
        }
        HprofShrinkException io = Check.throwsA(HprofShrinkException.class,
                () -> HprofShrink.shrink(dir.resolve("missing.hprof").toFile(), zip, new Options()));
        equal(HprofShrinkException.Kind.IO, io.getKind(), "kind (" + io.getMessage() + ")");
        equal(0, Check.names(dir).length, "no file: " + Arrays.toString(Check.names(dir)));
    }

    /** What the listener throws cancels the job and reaches the caller as it is; no output is left. */
    public void testListenerExceptionCancelsAndIsRethrown() throws Exception {
        File zip = dir.resolve("x.zip").toFile();
        Job job = new Job(Check.fixture("hotspot-android.hprof"), zip, new Options());
        IllegalStateException e = Check.throwsA(IllegalStateException.class, () -> job.run((s, d, t) -> {
            throw new IllegalStateException("from the listener");
        }));
        equal("from the listener", e.getMessage(), "the listener's exception");
        check(job.isCancelled(), "cancelled");
        equal(0, Check.names(dir).length, "no file: " + Arrays.toString(Check.names(dir)));
    }

    /** A panic in the library (injected through the test build's hook) is an INTERNAL exception; the JVM lives on. */
    public void testPanicBecomesAnException() throws Exception {
        if (!Boolean.getBoolean("hprofshrink.testHooks")) {
            throw new AssertionError("the library must be built with --features test-hooks for this test");
        }
        File zip = dir.resolve("x.zip").toFile();
        HprofShrinkException e = Check.throwsA(HprofShrinkException.class, () -> HprofShrink.shrink(
                Check.fixture("art-api25.hprof"), zip, new Options().extra("hprofShrinkTestPanic", "1")));
        equal(HprofShrinkException.Kind.INTERNAL, e.getKind(), "kind (" + e.getMessage() + ")");
        check(e.getMessage().contains("panic") && e.getMessage().contains("injected by a test"), e.getMessage());
        HprofShrink.shrink(Check.fixture("art-api25.hprof"), zip, new Options());
        check(zip.isFile(), "the library works on after the panic");
    }
}
