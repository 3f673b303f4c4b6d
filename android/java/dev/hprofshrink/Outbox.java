package dev.hprofshrink;

import java.io.File;
import java.io.FileInputStream;
import java.io.FileNotFoundException;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

/**
 * A directory of packages waiting to be uploaded, with the conventions of the CLI's
 * {@code upload --outbox} (docs/upload.md): a package waits as a regular {@code *.zip} file
 * whose name does not start with {@code .}, a Perfetto heap-graph trace as a
 * {@code *.pftrace} or {@code *.perfetto-trace} one ({@link #addTrace}: sent as it is); packages are sent oldest first (modification
 * time, then name); one leaves the outbox only after the server's 2xx (deleted), or moved to
 * {@code rejected/} when the server refuses it for good. A process killed at any point loses
 * no package: killed between the 2xx and the delete, the next run sends the same bytes again
 * with the same MD5, and {@code serve} records them once (at-least-once delivery).
 *
 * <p>The directory is bounded: past {@code maxCount} packages or {@code maxBytes} bytes the
 * oldest are deleted when a package is added (never the one added), and {@code rejected/}
 * keeps at most {@code maxCount} packages.
 *
 * <p>Thread-safe, and safe across processes: {@link #sendAll} holds a file lock
 * ({@code .hprof-shrink-outbox.lock}) while it sends, so two senders never send the same
 * package (the second finds the outbox busy). Scheduling is the app's: call
 * {@link #sendAll} from a WorkManager worker or a JobScheduler job (docs/android.md).
 */
public final class Outbox {
    /** Where packages the server refused for good go, inside the outbox. */
    public static final String REJECTED_DIR = "rejected";
    /** The default bounds: 20 packages, 256 MiB. */
    public static final int DEFAULT_MAX_COUNT = 20;
    /** See {@link #DEFAULT_MAX_COUNT}. */
    public static final long DEFAULT_MAX_BYTES = 256L << 20;

    static final String INCOMING_SUFFIX = ".hprof-shrink-incoming";
    static final String LOCK_FILE = ".hprof-shrink-outbox.lock";
    /** A package being copied in that is older than this was left by a killed process. */
    static final long STALE_INCOMING_MILLIS = 60L * 60 * 1000;
    /** Packages in a row that find the server unreachable before a run stops trying the rest. */
    static final int UNREACHABLE_IN_A_ROW = 2;
    /** A Perfetto trace's first byte: {@code Trace.packet}'s tag (field 1, length-delimited). */
    static final int TRACE_PACKET_TAG = 0x0a;
    /** The endings of the traces waiting beside the packages. */
    static final String[] TRACE_ENDINGS = {".pftrace", ".perfetto-trace"};
    /** The most of {@code result.info} read (it holds four short lines). */
    static final int RESULT_INFO_LIMIT = 64 * 1024;
    /**
     * Test hook: a file path; after a 2xx the sender creates that file and waits to be killed,
     * before deleting the package (the test of a kill between "sent" and "deleted").
     */
    static final String PAUSE_AFTER_SENT_PROPERTY = "dev.hprofshrink.outbox.testPauseAfterSent";

    /** The outboxes this process is sending (canonical paths): a file lock does not exclude its own process. */
    private static final Set<String> SENDING = new HashSet<String>();

    private final File dir;
    private final int maxCount;
    private final long maxBytes;
    private final Random random = new Random();

    /** The outbox in {@code dir}, with the default bounds. Nothing is created until a package is added. */
    public Outbox(File dir) {
        this(dir, DEFAULT_MAX_COUNT, DEFAULT_MAX_BYTES);
    }

    /**
     * @param dir the directory (made when the first package is added)
     * @param maxCount the most packages kept waiting (at least 1)
     * @param maxBytes the most bytes kept waiting; a larger package is refused by {@link #add}
     */
    public Outbox(File dir, int maxCount, long maxBytes) {
        this.dir = Options.nonNull(dir, "dir");
        this.maxCount = Math.max(1, maxCount);
        this.maxBytes = Math.max(1, maxBytes);
    }

    /** The directory. */
    public File getDir() {
        return dir;
    }

    /**
     * Moves {@code pkg} into the outbox: renamed when on the same filesystem (atomic: it is in
     * the outbox or where it was), else copied under a hidden name, synced, renamed into place,
     * and only then deleted where it was. A waiting package is never replaced: the name gets
     * {@code -2}, {@code -3}... when taken. Then the oldest packages past the bounds are deleted.
     *
     * @return the package's file in the outbox
     * @throws IOException when it is missing, larger than {@code maxBytes}, or cannot be moved
     *     (it then stays where it was)
     */
    public File add(File pkg) throws IOException {
        if (!pkg.isFile()) {
            throw new FileNotFoundException(pkg + ": no such file");
        }
        long len = pkg.length();
        if (len > maxBytes) {
            throw new IOException(pkg + ": " + len + " bytes, more than the outbox holds (" + maxBytes + ")");
        }
        if (!dir.isDirectory() && !dir.mkdirs() && !dir.isDirectory()) {
            throw new IOException(dir + ": cannot make the outbox directory");
        }
        synchronized (Outbox.class) {
            sweepIncoming();
            File target = freeName(dir, zipName(pkg.getName()));
            if (!pkg.renameTo(target)) {
                copyIn(pkg, target);
            }
            enforceBounds(target);
            return target;
        }
    }

    /**
     * Copies the Perfetto heap-graph trace {@code trace} into the outbox, to be sent as it is:
     * the file {@code ProfilingManager} hands the app for a Java heap dump (API 35+,
     * docs/android.md). Copied under a hidden name, synced and renamed into place (as
     * {@code NAME.pftrace} or {@code NAME.perfetto-trace}; {@code -2}, {@code -3}... when
     * taken), so a sender sees the whole trace or nothing; the source is left where it is
     * (it is its writer's). Then the oldest packages past the bounds are deleted.
     *
     * @return the trace's file in the outbox
     * @throws IOException when it is missing, larger than {@code maxBytes}, does not start as
     *     a trace does (its first byte, {@code Trace.packet}'s tag 0x0a), or cannot be copied
     */
    public File addTrace(File trace) throws IOException {
        if (!trace.isFile()) {
            throw new FileNotFoundException(trace + ": no such file");
        }
        long len = trace.length();
        if (len > maxBytes) {
            throw new IOException(trace + ": " + len + " bytes, more than the outbox holds (" + maxBytes + ")");
        }
        if (!startsAsTrace(trace)) {
            throw new IOException(trace + ": not a Perfetto trace (its first byte is not 0x0a)");
        }
        if (!dir.isDirectory() && !dir.mkdirs() && !dir.isDirectory()) {
            throw new IOException(dir + ": cannot make the outbox directory");
        }
        synchronized (Outbox.class) {
            sweepIncoming();
            File target = freeName(dir, traceName(trace.getName()));
            copy(trace, target);
            enforceBounds(target);
            return target;
        }
    }

    /** Whether {@code f}'s first byte is a trace's: {@code Trace.packet}'s tag. */
    static boolean startsAsTrace(File f) throws IOException {
        InputStream in = new FileInputStream(f);
        try {
            return in.read() == TRACE_PACKET_TAG;
        } finally {
            in.close();
        }
    }

    /** The packages waiting, oldest first. */
    public List<File> pending() {
        return zips(dir);
    }

    /** The packages refused for good, in {@code rejected/}, oldest first. */
    public List<File> rejected() {
        return zips(new File(dir, REJECTED_DIR));
    }

    /** {@link #sendAll(UploadConfig)} with the POST protocol and the defaults. */
    public SendReport sendAll(String url, String token) {
        return sendAll(new UploadConfig(url, token));
    }

    /**
     * Uploads every waiting package, oldest first, on this thread (it blocks: network time,
     * retries and their waits), and says what became of each. Retries network faults, 408,
     * 429 and 5xx with backoff (see {@link UploadConfig}); a 422 or 413 moves the package to
     * {@code rejected/}; another 4xx (401, 403: a wrong token; 400) leaves it for the next run.
     * Stops early, leaving the rest for the next run, when two packages in a row find the
     * server unreachable, when a {@code Retry-After} is longer than allowed, or when the
     * thread is interrupted (its interrupt flag stays set).
     */
    public SendReport sendAll(UploadConfig cfg) {
        SendReport report = new SendReport();
        if (!dir.isDirectory()) {
            return report;
        }
        String key;
        try {
            key = dir.getCanonicalPath();
        } catch (IOException e) {
            key = dir.getAbsolutePath();
        }
        synchronized (SENDING) {
            if (!SENDING.add(key)) {
                report.busy = true;
                return report;
            }
        }
        try {
            sendLocked(cfg, report);
        } finally {
            synchronized (SENDING) {
                SENDING.remove(key);
            }
        }
        return report;
    }

    private void sendLocked(UploadConfig cfg, SendReport report) {
        RandomAccessFile lockFile = null;
        FileLock lock = null;
        try {
            lockFile = new RandomAccessFile(new File(dir, LOCK_FILE), "rw");
            lock = lockFile.getChannel().tryLock();
        } catch (IOException e) {
            report.stopped = "cannot lock the outbox: " + e.getMessage();
        } catch (OverlappingFileLockException e) {
            lock = null;
        }
        try {
            if (lock == null) {
                report.busy = report.stopped == null;
                return;
            }
            sweepIncoming();
            int unreachable = 0;
            for (File zip : pending()) {
                if (report.stopped != null) {
                    report.untried.add(zip.getName());
                    continue;
                }
                Outcome o = sendOne(zip, cfg, report);
                unreachable = o == Outcome.UNREACHABLE ? unreachable + 1 : 0;
                if (unreachable >= UNREACHABLE_IN_A_ROW) {
                    report.stopped = UNREACHABLE_IN_A_ROW + " packages in a row found the server unreachable";
                } else if (o == Outcome.STOP && report.stopped == null) {
                    report.stopped = "the server asked to wait longer than allowed, or the thread was interrupted";
                }
            }
        } finally {
            try {
                if (lock != null) {
                    lock.release();
                }
                if (lockFile != null) {
                    lockFile.close();
                }
            } catch (IOException ignored) {
                // Closing the file releases the lock; nothing else depends on it.
            }
        }
    }

    private enum Outcome {
        DONE,
        FAILED,
        UNREACHABLE,
        STOP
    }

    /** One package, with its retries. */
    private Outcome sendOne(File zip, UploadConfig cfg, SendReport report) {
        String name = zip.getName();
        Attempt.Digest digest;
        List<String[]> fields = Collections.emptyList();
        try {
            digest = Attempt.digest(zip);
        } catch (IOException e) {
            if (!zip.exists()) {
                return Outcome.DONE; // dropped by an add's bounds meanwhile
            }
            report.failed.add(name + ": reading it: " + e.getMessage());
            return Outcome.FAILED;
        }
        boolean trace;
        try {
            trace = startsAsTrace(zip);
        } catch (IOException e) {
            report.failed.add(name + ": reading it: " + e.getMessage());
            return Outcome.FAILED;
        }
        // A trace has no result.info: serve reads what it needs from the trace.
        if (cfg.method == UploadConfig.Method.POST && !trace) {
            try {
                fields = resultInfo(zip);
            } catch (IOException e) {
                reject(zip, "not a package: " + e.getMessage(), report);
                return Outcome.DONE;
            }
        }
        String last = "no attempt";
        boolean unreachable = false;
        for (int attempt = 0; attempt <= cfg.retries; attempt++) {
            long wait = backoff(cfg, attempt);
            try {
                Attempt.Answer a = Attempt.send(zip, digest, fields, cfg);
                unreachable = false;
                int s = a.status;
                String said = s + " " + redact(a.body, cfg.token);
                if (s >= 200 && s < 300 && !etagDiffers(a.etag, digest, cfg)) {
                    pauseAfterSent();
                    if (zip.delete() || !zip.exists()) {
                        report.sent.add(name);
                    } else {
                        report.failed.add(name + ": sent, but could not be deleted (it will be sent again)");
                    }
                    return Outcome.DONE;
                } else if (s >= 200 && s < 300) {
                    last = "the answer's ETag " + a.etag + " is not the package's MD5 " + digest.hex();
                } else if (s == 422 || s == 413) {
                    reject(zip, "the server refused it: " + said, report);
                    return Outcome.DONE;
                } else if (s == 408 || s == 429 || s >= 500) {
                    last = said;
                    if (a.retryAfterMillis > cfg.maxRetryWaitMillis) {
                        report.failed.add(name + ": " + said + " (Retry-After " + a.retryAfterMillis / 1000 + " s)");
                        return Outcome.STOP;
                    }
                    wait = Math.max(wait, a.retryAfterMillis);
                } else {
                    // Another refusal (a wrong token, a bad request): the same answer every
                    // time, but not the package's fault; it stays for a later run.
                    report.failed.add(name + ": " + said);
                    return Outcome.FAILED;
                }
            } catch (IOException e) {
                last = e.getClass().getSimpleName() + ": " + redact(String.valueOf(e.getMessage()), cfg.token);
                unreachable = e instanceof ConnectException || e instanceof UnknownHostException
                        || e instanceof NoRouteToHostException || e instanceof SocketTimeoutException;
            }
            if (attempt < cfg.retries && !sleep(wait)) {
                report.failed.add(name + ": interrupted after " + last);
                return Outcome.STOP;
            }
        }
        report.failed.add(name + ": " + last + " (after " + (cfg.retries + 1) + " attempts)");
        return unreachable ? Outcome.UNREACHABLE : Outcome.FAILED;
    }

    /** Between half and all of base * 2^n, capped; random so that clients that failed together do not return together. */
    private long backoff(UploadConfig cfg, int attempt) {
        long full = cfg.backoffMillis;
        for (int i = 0; i < attempt && full < cfg.maxBackoffMillis; i++) {
            full *= 2;
        }
        full = Math.min(full, cfg.maxBackoffMillis);
        long half = full / 2;
        return half + (long) (random.nextDouble() * (full - half));
    }

    /** A PUT's 2xx whose ETag is an MD5 other than the package's: damage on the way. */
    private static boolean etagDiffers(String etag, Attempt.Digest digest, UploadConfig cfg) {
        if (cfg.method != UploadConfig.Method.PUT || etag == null) {
            return false;
        }
        String e = etag.replace("\"", "").trim().toLowerCase(java.util.Locale.ROOT);
        return e.matches("[0-9a-f]{32}") && !e.equals(digest.hex());
    }

    private static boolean sleep(long millis) {
        if (millis <= 0) {
            return !Thread.currentThread().isInterrupted();
        }
        try {
            Thread.sleep(millis);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static void pauseAfterSent() {
        String marker = System.getProperty(PAUSE_AFTER_SENT_PROPERTY);
        if (marker == null) {
            return;
        }
        try {
            new FileOutputStream(marker).close();
            Thread.sleep(Long.MAX_VALUE);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String redact(String text, String token) {
        String t = text.length() > 200 ? text.substring(0, 200) + "..." : text;
        t = t.replace('\n', ' ').replace('\r', ' ');
        return token == null || token.isEmpty() ? t : t.replace(token, "***");
    }

    /** Moves a package refused for good to rejected/, with the reason beside it. */
    private void reject(File zip, String reason, SendReport report) {
        File rejectedDir = new File(dir, REJECTED_DIR);
        String name = zip.getName();
        synchronized (Outbox.class) {
            rejectedDir.mkdirs();
            File target = freeName(rejectedDir, name);
            if (!zip.renameTo(target)) {
                report.failed.add(name + ": " + reason + "; could not be moved to " + REJECTED_DIR + "/");
                return;
            }
            try {
                FileOutputStream out = new FileOutputStream(new File(rejectedDir, target.getName() + ".txt"));
                try {
                    out.write((reason + "\n").getBytes(Attempt.UTF8));
                } finally {
                    out.close();
                }
            } catch (IOException ignored) {
                // The package is out of the outbox either way; the reason is in the report.
            }
            List<File> kept = zips(rejectedDir);
            for (int i = 0; i + maxCount < kept.size(); i++) {
                kept.get(i).delete();
                new File(rejectedDir, kept.get(i).getName() + ".txt").delete();
            }
        }
        report.rejected.add(name + ": " + reason);
    }

    /** result.info's key=value lines, in order; the IOException says why the file is no package. */
    static List<String[]> resultInfo(File zip) throws IOException {
        java.util.zip.ZipFile z = new java.util.zip.ZipFile(zip);
        try {
            java.util.zip.ZipEntry e = z.getEntry("result.info");
            if (e == null) {
                throw new IOException("no result.info");
            }
            InputStream in = z.getInputStream(e);
            byte[] buf = new byte[RESULT_INFO_LIMIT];
            int n = 0;
            try {
                int r;
                while (n < buf.length && (r = in.read(buf, n, buf.length - n)) > 0) {
                    n += r;
                }
            } finally {
                in.close();
            }
            List<String[]> fields = new ArrayList<String[]>();
            for (String line : new String(buf, 0, n, Attempt.UTF8).split("\r?\n")) {
                int eq = line.indexOf('=');
                if (line.isEmpty() || line.startsWith("#") || eq <= 0) {
                    continue;
                }
                fields.add(new String[] {line.substring(0, eq), line.substring(eq + 1)});
            }
            return fields;
        } finally {
            z.close();
        }
    }

    private void copyIn(File pkg, File target) throws IOException {
        copy(pkg, target);
        // In the outbox now; where it was, it goes (if that fails, it is merely there twice).
        pkg.delete();
    }

    /** Copies {@code pkg} to {@code target} under a hidden name, synced, then renamed. */
    private void copy(File pkg, File target) throws IOException {
        File staged = new File(dir, "." + target.getName() + "." + Long.toHexString(random.nextLong()) + INCOMING_SUFFIX);
        try {
            InputStream in = new FileInputStream(pkg);
            try {
                FileOutputStream out = new FileOutputStream(staged);
                try {
                    byte[] buf = new byte[64 * 1024];
                    int n;
                    while ((n = in.read(buf)) > 0) {
                        out.write(buf, 0, n);
                    }
                    out.getFD().sync();
                } finally {
                    out.close();
                }
            } finally {
                in.close();
            }
            staged.setLastModified(pkg.lastModified());
            if (!staged.renameTo(target)) {
                throw new IOException(target + ": cannot rename the copy into place");
            }
        } catch (IOException e) {
            staged.delete();
            throw e;
        }
    }

    /** Removes copies a killed add left behind: their source was deleted only after the rename, so it still exists. */
    private void sweepIncoming() {
        File[] files = dir.listFiles();
        if (files == null) {
            return;
        }
        long now = System.currentTimeMillis();
        for (File f : files) {
            if (f.getName().startsWith(".") && f.getName().endsWith(INCOMING_SUFFIX)
                    && now - f.lastModified() > STALE_INCOMING_MILLIS) {
                f.delete();
            }
        }
    }

    /** Deletes the oldest packages (never {@code keep}) while the outbox holds too many or too much. */
    private void enforceBounds(File keep) {
        List<File> zips = zips(dir);
        long bytes = 0;
        for (File f : zips) {
            bytes += f.length();
        }
        int count = zips.size();
        for (File f : zips) {
            if (count <= maxCount && bytes <= maxBytes) {
                break;
            }
            if (f.equals(keep)) {
                continue;
            }
            long len = f.length();
            if (f.delete()) {
                count--;
                bytes -= len;
            }
        }
    }

    private static String zipName(String name) {
        String n = name;
        while (n.startsWith(".")) {
            n = n.substring(1);
        }
        if (n.isEmpty()) {
            n = "package";
        }
        return n.endsWith(".zip") ? n : n + ".zip";
    }

    /** A trace's name in the outbox: its own, leading dots removed, {@code .perfetto-trace} added unless it ends as a trace's. */
    private static String traceName(String name) {
        String n = name;
        while (n.startsWith(".")) {
            n = n.substring(1);
        }
        if (n.isEmpty()) {
            n = "heap";
        }
        return ending(n) != null && !n.endsWith(".zip") ? n : n + ".perfetto-trace";
    }

    /** The ending of a file the outbox sends ({@code .zip} or a trace's), or null. */
    private static String ending(String name) {
        if (name.endsWith(".zip")) {
            return ".zip";
        }
        for (String e : TRACE_ENDINGS) {
            if (name.endsWith(e)) {
                return e;
            }
        }
        return null;
    }

    /** {@code name} in {@code dir}, or {@code STEM-2.zip}, {@code STEM-3.zip}... (its own ending) when taken. */
    private static File freeName(File dir, String name) {
        File f = new File(dir, name);
        String end = ending(name) == null ? ".zip" : ending(name);
        String stem = name.endsWith(end) ? name.substring(0, name.length() - end.length()) : name;
        for (int i = 2; f.exists(); i++) {
            f = new File(dir, stem + "-" + i + end);
        }
        return f;
    }

    /** The finished packages and traces in {@code d}, oldest first (modification time, then name). */
    private static List<File> zips(File d) {
        File[] files = d.listFiles();
        if (files == null) {
            return new ArrayList<File>();
        }
        List<File> zips = new ArrayList<File>();
        for (File f : files) {
            String n = f.getName();
            if (ending(n) != null && !n.startsWith(".") && f.isFile()) {
                zips.add(f);
            }
        }
        Collections.sort(zips, new Comparator<File>() {
            @Override
            public int compare(File a, File b) {
                int c = Long.compare(a.lastModified(), b.lastModified());
                return c != 0 ? c : a.getName().compareTo(b.getName());
            }
        });
        return zips;
    }
}
