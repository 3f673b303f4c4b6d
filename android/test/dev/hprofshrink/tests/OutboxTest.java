package dev.hprofshrink.tests;

import static dev.hprofshrink.tests.Check.check;
import static dev.hprofshrink.tests.Check.equal;

import dev.hprofshrink.HprofShrink;
import dev.hprofshrink.Options;
import dev.hprofshrink.Outbox;
import dev.hprofshrink.SendReport;
import dev.hprofshrink.UploadConfig;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/** The Java outbox against a real {@code hprof-shrink serve}, with faults in between. */
public final class OutboxTest implements AutoCloseable {
    private final Path work = Check.tempDir();
    private final Path box = work.resolve("outbox");
    private final Serve serve = new Serve(work.resolve("serve"));
    private int made;

    public OutboxTest() throws Exception {}

    @Override
    public void close() throws java.io.IOException {
        serve.close();
        Check.deleteTree(work);
    }

    /** A new package (different bytes each time), shrunk through the Java API. */
    private File newPackage(String name) throws Exception {
        File zip = work.resolve(name).toFile();
        HprofShrink.shrink(Check.fixture("art-api25.hprof"), zip, new Options().level(1).extra("n", "" + made++));
        return zip;
    }

    private static String md5(File f) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("MD5").digest(Files.readAllBytes(f.toPath())));
    }

    /** Quick retries for the tests: 10 to 40 ms instead of 1 to 30 s. */
    private UploadConfig config(String url) {
        return new UploadConfig(url, Serve.UPLOAD_TOKEN).backoffMillis(10, 40).connectTimeoutMillis(2000);
    }

    /** add moves the package in; sendAll POSTs it, serve records it once, and it is deleted. */
    public void testPostUploadsAndDeletesAfter2xx() throws Exception {
        File pkg = newPackage("leak.zip");
        String md5 = md5(pkg);
        Outbox outbox = new Outbox(box.toFile());
        File queued = outbox.add(pkg);
        check(!pkg.exists() && queued.isFile(), "moved into the outbox: " + queued);
        equal(List.of(queued), outbox.pending(), "pending");
        SendReport r = outbox.sendAll(serve.packagesUrl(), Serve.UPLOAD_TOKEN);
        check(r.isClean(), "clean: " + r);
        equal(List.of("leak.zip"), r.getSent(), "sent");
        equal(List.of(), outbox.pending(), "pending after");
        equal(1, serve.records(md5), "records of the package");
    }

    /** The PUT protocol with Content-MD5, the file name appended to a URL ending in /. */
    public void testPutUploads() throws Exception {
        File pkg = newPackage("put.zip");
        String md5 = md5(pkg);
        Outbox outbox = new Outbox(box.toFile());
        outbox.add(pkg);
        SendReport r = outbox.sendAll(config(serve.packagesUrl() + "/").method(UploadConfig.Method.PUT));
        equal(List.of("put.zip"), r.getSent(), "sent (" + r + ")");
        equal(1, serve.records(md5), "records");
    }

    /** A server that answers 503 then takes the package: retried, sent, one record. */
    public void testRetries503Then201() throws Exception {
        File pkg = newPackage("busy.zip");
        String md5 = md5(pkg);
        Outbox outbox = new Outbox(box.toFile());
        outbox.add(pkg);
        try (FaultProxy proxy = new FaultProxy(serve.port, FaultProxy.Fault.ANSWER_503, FaultProxy.Fault.ANSWER_503)) {
            SendReport r = outbox.sendAll(config(proxy.url("/api/packages")));
            equal(List.of("busy.zip"), r.getSent(), "sent (" + r + ")");
            equal(3, proxy.connections.get(), "two 503s, then the upload");
        }
        equal(1, serve.records(md5), "records");
        equal(List.of(), outbox.pending(), "pending");
    }

    /** A server that dies mid-upload (the connection reset in the body): retried, sent, one record. */
    public void testServerKilledMidUpload() throws Exception {
        File pkg = newPackage("cut.zip");
        String md5 = md5(pkg);
        Outbox outbox = new Outbox(box.toFile());
        outbox.add(pkg);
        try (FaultProxy proxy = new FaultProxy(serve.port, FaultProxy.Fault.DIE_MID_BODY)) {
            SendReport r = outbox.sendAll(config(proxy.url("/api/packages")));
            equal(List.of("cut.zip"), r.getSent(), "sent (" + r + ")");
            equal(2, proxy.connections.get(), "the cut attempt, then the upload");
        }
        equal(1, serve.records(md5), "records");
    }

    /**
     * No server at all: the packages stay, the run stops after two unreachable in a row and
     * leaves the third untried; once the server is there, all go.
     */
    public void testServerDownLeavesPackagesForLater() throws Exception {
        Outbox outbox = new Outbox(box.toFile());
        for (int i = 0; i < 3; i++) {
            File q = outbox.add(newPackage("down" + i + ".zip"));
            q.setLastModified(1_000_000_000_000L + i * 1000L); // oldest first: down0, down1, down2
        }
        int deadPort;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
            deadPort = s.getLocalPort();
        }
        SendReport r = outbox.sendAll(config("http://127.0.0.1:" + deadPort + "/api/packages").retries(1));
        equal(2, r.getFailed().size(), "failed (" + r + ")");
        equal(List.of("down2.zip"), r.getUntried(), "untried");
        check(r.getStopped() != null && r.getStopped().contains("unreachable"), "stopped: " + r.getStopped());
        equal(3, outbox.pending().size(), "all still pending");
        SendReport again = outbox.sendAll(config(serve.packagesUrl()));
        equal(List.of("down0.zip", "down1.zip", "down2.zip"), again.getSent(), "sent later (" + again + ")");
        equal(3, serve.records(), "records");
    }

    /** 422 (fails serve's verify) moves the package to rejected/ with the answer; never sent again. */
    public void test422MovesAsideForGood() throws Exception {
        Files.createDirectories(box);
        File bad = box.resolve("bad.zip").toFile();
        try (ZipOutputStream z = new ZipOutputStream(new FileOutputStream(bad))) {
            z.putNextEntry(new ZipEntry("result.info"));
            z.write("sdkVersion=25\nmanufacturer=ACME\nhprofEntry=x.hprof\nleakedActivityKey=k\n".getBytes("UTF-8"));
            z.putNextEntry(new ZipEntry("x.hprof"));
            z.write("not a heap dump".getBytes("UTF-8"));
        }
        File notZip = box.resolve("junk.zip").toFile();
        Files.write(notZip.toPath(), "junk".getBytes("UTF-8"));
        Outbox outbox = new Outbox(box.toFile());
        SendReport r = outbox.sendAll(config(serve.packagesUrl()));
        equal(2, r.getRejected().size(), "rejected (" + r + ")");
        check(r.getRejected().stream().anyMatch(s -> s.startsWith("bad.zip: the server refused it: 422")), "422: " + r);
        check(r.getRejected().stream().anyMatch(s -> s.startsWith("junk.zip: not a package")), "junk: " + r);
        equal(List.of(), outbox.pending(), "pending");
        equal(2, outbox.rejected().size(), "in rejected/");
        String why = Files.readString(box.resolve("rejected/bad.zip.txt"));
        check(why.contains("422"), "the answer beside it: " + why);
        SendReport again = outbox.sendAll(config(serve.packagesUrl()));
        check(again.getSent().isEmpty() && again.getRejected().isEmpty() && again.isClean(), "not sent again: " + again);
        equal(0, serve.records(), "records");
    }

    /** A wrong token (401) leaves the package in the outbox, not rejected: it is not the package's fault. */
    public void testWrongTokenLeavesThePackage() throws Exception {
        Outbox outbox = new Outbox(box.toFile());
        outbox.add(newPackage("token.zip"));
        SendReport r = outbox.sendAll(new UploadConfig(serve.packagesUrl(), "wrong-token-value"));
        equal(1, r.getFailed().size(), "failed (" + r + ")");
        check(r.getFailed().get(0).contains("401") && !r.toString().contains("wrong-token-value"),
                "401, and the token nowhere in the report: " + r);
        equal(1, outbox.pending().size(), "still pending");
        equal(0, outbox.rejected().size(), "not rejected");
    }

    /**
     * The uploading JVM killed with SIGKILL between the server's 2xx and the delete: the package is
     * still there, sent again by the next run, and serve still has one record. While the killed
     * JVM held the outbox, another sender found it busy.
     */
    public void testKill9BetweenSentAndDeleted() throws Exception {
        File pkg = newPackage("kill.zip");
        String md5 = md5(pkg);
        Outbox outbox = new Outbox(box.toFile());
        outbox.add(pkg);
        Path marker = work.resolve("sent.marker");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                "-Djava.library.path=" + System.getProperty("java.library.path"),
                "-Ddev.hprofshrink.outbox.testPauseAfterSent=" + marker, SendOnce.class.getName(), box.toString(),
                serve.packagesUrl(), Serve.UPLOAD_TOKEN).inheritIO().start();
        try {
            for (int i = 0; i < 600 && !Files.exists(marker); i++) {
                check(child.isAlive(), "the sending JVM is alive until killed");
                Thread.sleep(100);
            }
            check(Files.exists(marker), "the sending JVM got its 2xx");
            equal(1, serve.records(md5), "records after the first send");
            check(outbox.sendAll(config(serve.packagesUrl())).isBusy(), "busy while the other JVM sends");
        } finally {
            child.destroyForcibly(); // SIGKILL
            child.waitFor(30, TimeUnit.SECONDS);
        }
        equal(137, child.exitValue(), "killed by SIGKILL");
        equal(1, outbox.pending().size(), "the package is still in the outbox");
        SendReport r = outbox.sendAll(config(serve.packagesUrl()));
        equal(List.of("kill.zip"), r.getSent(), "sent again (" + r + ")");
        equal(List.of(), outbox.pending(), "then deleted");
        equal(1, serve.records(md5), "still one record");
    }

    /** The bounds: the oldest go past the count or the bytes (never the one added); a package larger than the bytes is refused. */
    public void testBoundsDropTheOldest() throws Exception {
        Outbox byCount = new Outbox(box.toFile(), 2, Long.MAX_VALUE);
        File a = byCount.add(newPackage("a.zip"));
        a.setLastModified(a.lastModified() - 10_000);
        byCount.add(newPackage("b.zip"));
        byCount.add(newPackage("c.zip"));
        equal(List.of("b.zip", "c.zip"), byCount.pending().stream().map(File::getName).sorted().toList(), "by count");

        File d = newPackage("d.zip");
        long size = d.length();
        Outbox byBytes = new Outbox(box.toFile(), 100, size * 2 + size / 2);
        byBytes.add(d);
        List<String> left = byBytes.pending().stream().map(File::getName).toList();
        equal(2, left.size(), "by bytes: " + left);
        check(left.contains("d.zip"), "the one added stays: " + left);

        File big = newPackage("big.zip");
        Outbox tiny = new Outbox(box.toFile(), 100, 10);
        check(Check.throwsA(IOException.class, () -> tiny.add(big)).getMessage().contains("more than the outbox holds"),
                "too large");
        check(big.isFile(), "a refused package stays where it was");
    }

    /** A taken name gets -2; a hidden copy left by a killed add is no package, and goes once stale. */
    public void testAddNeverReplacesAndSweepsStaleCopies() throws Exception {
        Outbox outbox = new Outbox(box.toFile());
        File first = outbox.add(newPackage("same.zip"));
        File second = outbox.add(newPackage("same.zip"));
        equal("same.zip", first.getName(), "first");
        equal("same-2.zip", second.getName(), "second");
        File stale = box.resolve(".x.zip.1.hprof-shrink-incoming").toFile();
        File fresh = box.resolve(".y.zip.2.hprof-shrink-incoming").toFile();
        Files.write(stale.toPath(), new byte[10]);
        Files.write(fresh.toPath(), new byte[10]);
        stale.setLastModified(System.currentTimeMillis() - 2 * 3600 * 1000);
        equal(2, outbox.pending().size(), "hidden copies are not pending");
        outbox.add(newPackage("third.zip"));
        check(!stale.exists() && fresh.exists(), "the stale copy is swept, the fresh one kept");
    }

    /** A protobuf varint. */
    private static void varint(java.io.ByteArrayOutputStream out, long v) {
        while ((v & ~0x7fL) != 0) {
            out.write((int) ((v & 0x7f) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }

    private static void intField(java.io.ByteArrayOutputStream out, int field, long v) {
        varint(out, (long) field << 3);
        varint(out, v);
    }

    private static void bytesField(java.io.ByteArrayOutputStream out, int field, byte[] body) {
        varint(out, (long) field << 3 | 2);
        varint(out, body.length);
        out.write(body, 0, body.length);
    }

    /**
     * A Perfetto trace holding one heap graph (pid 7): a JNI global root holding a
     * com.example.Node of 64 bytes, encoded here by heap_graph.proto's field numbers
     * (TracePacket.heap_graph 56; HeapGraph pid 1, objects 2, roots 7, types 9), as the
     * Rust tests' writer (crates/test-support) does.
     */
    private static byte[] heapGraphTrace() {
        java.io.ByteArrayOutputStream type = new java.io.ByteArrayOutputStream();
        intField(type, 1, 1);
        bytesField(type, 3, "com.example.Node".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        java.io.ByteArrayOutputStream object = new java.io.ByteArrayOutputStream();
        intField(object, 1, 0x10);
        intField(object, 2, 1);
        intField(object, 3, 64);
        java.io.ByteArrayOutputStream root = new java.io.ByteArrayOutputStream();
        intField(root, 1, 0x10);
        intField(root, 2, 1);
        java.io.ByteArrayOutputStream graph = new java.io.ByteArrayOutputStream();
        intField(graph, 1, 7);
        bytesField(graph, 9, type.toByteArray());
        bytesField(graph, 2, object.toByteArray());
        bytesField(graph, 7, root.toByteArray());
        java.io.ByteArrayOutputStream packet = new java.io.ByteArrayOutputStream();
        intField(packet, 8, 10);
        bytesField(packet, 56, graph.toByteArray());
        java.io.ByteArrayOutputStream trace = new java.io.ByteArrayOutputStream();
        bytesField(trace, 1, packet.toByteArray());
        return trace.toByteArray();
    }

    /**
     * addTrace copies a trace in (the source stays, as ProfilingManager's file is the
     * system's), sendAll sends it as it is (POST and PUT: no result.info) and serve records
     * it as a heap graph; a trace that is no heap graph is refused for good (422) and moved
     * to rejected/; a file that does not start as a trace is not added.
     */
    public void testAddTraceSendsItAsItIs() throws Exception {
        byte[] bytes = heapGraphTrace();
        File trace = work.resolve("heap.pftrace").toFile();
        Files.write(trace.toPath(), bytes);
        Outbox outbox = new Outbox(box.toFile());
        File queued = outbox.addTrace(trace);
        equal("heap.pftrace", queued.getName(), "its name");
        check(trace.isFile(), "the source stays");
        equal(List.of(queued), outbox.pending(), "pending");
        SendReport r = outbox.sendAll(config(serve.packagesUrl()));
        check(r.isClean(), "clean: " + r);
        equal(List.of("heap.pftrace"), r.getSent(), "sent");
        equal(1, serve.records(md5(trace)), "records of the trace");

        // The same trace by PUT: the same bytes, the first record.
        File again = outbox.addTrace(trace);
        SendReport put = outbox.sendAll(config(serve.packagesUrl() + "/").method(UploadConfig.Method.PUT));
        equal(List.of(again.getName()), put.getSent(), "sent by PUT (" + put + ")");

        // Only a clock packet: starts as a trace, holds no heap graph.
        File other = work.resolve("oom").toFile();
        Files.write(other.toPath(), new byte[] {0x0a, 0x04, 0x40, 0x0a, 0x30, 0x00});
        File queuedOther = outbox.addTrace(other);
        equal("oom.perfetto-trace", queuedOther.getName(), "a trace's ending added");
        SendReport refused = outbox.sendAll(config(serve.packagesUrl()));
        equal(1, refused.getRejected().size(), "rejected (" + refused + ")");
        check(refused.getRejected().get(0).startsWith("oom.perfetto-trace: the server refused it: 422"), "422: " + refused);
        equal(List.of(), outbox.pending(), "pending");

        File zip = work.resolve("x.pftrace").toFile();
        Files.write(zip.toPath(), "PK\u0003\u0004 a zip".getBytes("UTF-8"));
        check(Check.throwsA(IOException.class, () -> outbox.addTrace(zip)).getMessage().contains("not a Perfetto trace"),
                "not a trace");
        equal(List.of(), outbox.pending(), "nothing added");
        equal(1, serve.records(), "records");
    }
}
