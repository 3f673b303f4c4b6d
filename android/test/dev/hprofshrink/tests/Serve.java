package dev.hprofshrink.tests;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A real {@code hprof-shrink serve} on a free port of 127.0.0.1, with SQLite in a directory of its own. */
final class Serve implements AutoCloseable {
    static final String UPLOAD_TOKEN = "upload-secret";
    static final String READ_TOKEN = "read-secret";

    private final Process process;
    final String base;
    final int port;

    Serve(Path data) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(Check.cli(), "serve", "--data", data.toString(), "--listen",
                "127.0.0.1:0", "--workers", "0", "--keep-free", "0").redirectErrorStream(true);
        pb.environment().put("HPROF_SHRINK_UPLOAD_TOKEN", UPLOAD_TOKEN);
        pb.environment().put("HPROF_SHRINK_READ_TOKEN", READ_TOKEN);
        process = pb.start();
        CompletableFuture<String> started = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    Matcher m = Pattern.compile("serving on (http://[0-9.]+:([0-9]+))").matcher(line);
                    if (m.find()) {
                        started.complete(m.group(1));
                    }
                }
                started.completeExceptionally(new IOException("serve ended before it started listening"));
            } catch (IOException e) {
                started.completeExceptionally(e);
            }
        }, "serve output");
        reader.setDaemon(true);
        reader.start();
        try {
            base = started.get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            process.destroyForcibly();
            throw e;
        }
        port = Integer.parseInt(base.substring(base.lastIndexOf(':') + 1));
    }

    /** The upload endpoint. */
    String packagesUrl() {
        return base + "/api/packages";
    }

    /** How many records {@code serve} has with this MD5 (hex), from {@code GET /api/packages}. */
    int records(String md5) throws IOException {
        String json = get("/api/packages?limit=1000");
        Matcher m = Pattern.compile("\"md5\":\"" + md5 + "\"").matcher(json);
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    /** How many records {@code serve} has in all. */
    int records() throws IOException {
        Matcher m = Pattern.compile("\"md5\":\"[0-9a-f]{32}\"").matcher(get("/api/packages?limit=1000"));
        int n = 0;
        while (m.find()) {
            n++;
        }
        return n;
    }

    private String get(String path) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(base + path).openConnection();
        c.setRequestProperty("Authorization", "Bearer " + READ_TOKEN);
        Check.equal(200, c.getResponseCode(), "GET " + path);
        try (InputStream in = c.getInputStream()) {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            in.transferTo(b);
            return b.toString(StandardCharsets.UTF_8);
        }
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
