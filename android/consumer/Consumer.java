package consumer;

import dev.hprofshrink.HprofShrink;
import dev.hprofshrink.HprofShrinkException;
import dev.hprofshrink.Job;
import dev.hprofshrink.Options;
import dev.hprofshrink.Outbox;
import dev.hprofshrink.Report;
import dev.hprofshrink.SendReport;
import dev.hprofshrink.UploadConfig;
import java.io.File;
import java.io.IOException;

/**
 * An app's use of the AAR, compiled by scripts/aar.sh against its classes.jar alone (never
 * run): docs/android.md's path from a dump to serve, in Java 8.
 */
final class Consumer {
    private Consumer() {}

    static SendReport shrinkAndSend(File dump, File cacheDir, String url, String token)
            throws HprofShrinkException, IOException {
        File zip = new File(cacheDir, "leak.zip");
        Job job = new Job(dump, zip, new Options().extra("appVersion", "1.0").threads(2));
        Report report = job.run((stage, done, total) -> { });
        if (report.getZipBytes() <= 0) {
            throw new IOException("empty package");
        }
        Outbox outbox = new Outbox(new File(cacheDir, "outbox"), 10, 100L << 20);
        outbox.add(zip);
        dump.delete();
        return outbox.sendAll(new UploadConfig(url, token).retries(3));
    }

    static String version() {
        return HprofShrink.version();
    }
}
