package dev.hprofshrink;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.Charset;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.List;

/** One HTTP request that sends one package, with {@link HttpURLConnection} only. */
final class Attempt {
    private Attempt() {}

    static final Charset UTF8 = Charset.forName("UTF-8");
    /** The most of a server's answer kept (to show it, or to write it beside a refused package). */
    static final int ANSWER_LIMIT = 4096;

    /** A server's answer. */
    static final class Answer {
        final int status;
        final String body;
        /** Retry-After in milliseconds, -1 when absent or unreadable. */
        final long retryAfterMillis;
        final String etag;

        Answer(int status, String body, long retryAfterMillis, String etag) {
            this.status = status;
            this.body = body;
            this.retryAfterMillis = retryAfterMillis;
            this.etag = etag;
        }
    }

    /** A package's size and MD5, computed once so every attempt announces the same digest. */
    static final class Digest {
        final long length;
        final byte[] md5;

        Digest(long length, byte[] md5) {
            this.length = length;
            this.md5 = md5;
        }

        String hex() {
            StringBuilder s = new StringBuilder(32);
            for (byte b : md5) {
                s.append(Character.forDigit((b >> 4) & 15, 16)).append(Character.forDigit(b & 15, 16));
            }
            return s.toString();
        }

        String base64() {
            return Base64.encode(md5);
        }
    }

    static Digest digest(File file) throws IOException {
        MessageDigest md;
        try {
            md = MessageDigest.getInstance("MD5");
        } catch (NoSuchAlgorithmException e) {
            throw new IOException("no MD5 on this platform", e);
        }
        byte[] buf = new byte[64 * 1024];
        long len = 0;
        InputStream in = new FileInputStream(file);
        try {
            int n;
            while ((n = in.read(buf)) > 0) {
                md.update(buf, 0, n);
                len += n;
            }
        } finally {
            in.close();
        }
        return new Digest(len, md.digest());
    }

    /**
     * Sends {@code file} once. {@code fields} are the multipart text fields (POST); an
     * IOException is a network fault (no connection, reset, timeout).
     */
    static Answer send(File file, Digest digest, List<String[]> fields, UploadConfig cfg) throws IOException {
        String target = cfg.url;
        if (cfg.method == UploadConfig.Method.PUT && target.endsWith("/")) {
            target += file.getName();
        }
        HttpURLConnection c = (HttpURLConnection) new URL(target).openConnection();
        try {
            // A redirect is a failure: HttpURLConnection would not resend a streamed body.
            c.setInstanceFollowRedirects(false);
            c.setConnectTimeout(cfg.connectTimeoutMillis);
            c.setReadTimeout(cfg.readTimeoutMillis);
            c.setUseCaches(false);
            c.setDoOutput(true);
            if (cfg.token != null) {
                c.setRequestProperty("Authorization", "Bearer " + cfg.token);
            }
            byte[] head;
            byte[] tail;
            if (cfg.method == UploadConfig.Method.PUT) {
                c.setRequestMethod("PUT");
                c.setRequestProperty("Content-Type", contentType(file.getName()));
                c.setRequestProperty("Content-MD5", digest.base64());
                head = new byte[0];
                tail = new byte[0];
            } else {
                c.setRequestMethod("POST");
                String boundary = boundary();
                c.setRequestProperty("Content-Type", "multipart/form-data; boundary=" + boundary);
                head = multipartHead(boundary, fields, digest, file.getName());
                tail = ("\r\n--" + boundary + "--\r\n").getBytes(UTF8);
            }
            // The body's exact size: streamed from the file, never whole in memory.
            c.setFixedLengthStreamingMode(head.length + digest.length + tail.length);
            OutputStream out = c.getOutputStream();
            try {
                out.write(head);
                copyExactly(file, digest.length, out);
                out.write(tail);
            } finally {
                out.close();
            }
            int status = c.getResponseCode();
            InputStream body = status >= 400 ? c.getErrorStream() : c.getInputStream();
            return new Answer(status, readAnswer(body), RetryAfter.parseMillis(c.getHeaderField("Retry-After")),
                    c.getHeaderField("ETag"));
        } finally {
            // The answer was read only in part: the connection is not reused.
            c.disconnect();
        }
    }

    private static String boundary() {
        byte[] r = new byte[16];
        new SecureRandom().nextBytes(r);
        StringBuilder s = new StringBuilder("hprof-shrink-");
        for (byte b : r) {
            s.append(Character.forDigit((b >> 4) & 15, 16)).append(Character.forDigit(b & 15, 16));
        }
        return s.toString();
    }

    /**
     * What a file is sent as: a Perfetto trace as the bytes it is (as the CLI's upload
     * sends one), anything else as a package.
     */
    static String contentType(String fileName) {
        boolean trace = fileName.endsWith(".pftrace") || fileName.endsWith(".perfetto-trace");
        return trace ? "application/octet-stream" : "application/zip";
    }

    private static byte[] multipartHead(String boundary, List<String[]> fields, Digest digest, String fileName) {
        StringBuilder s = new StringBuilder();
        // Fields before the file, so a streaming server has them before the bytes.
        for (String[] f : fields) {
            if (f[0].equals("md5") || f[0].equals("file")) {
                continue;
            }
            part(s, boundary, f[0]).append("\r\n\r\n").append(f[1]).append("\r\n");
        }
        part(s, boundary, "md5").append("\r\n\r\n").append(digest.hex()).append("\r\n");
        part(s, boundary, "file").append("; filename=\"").append(quoted(fileName)).append("\"\r\n")
                .append("Content-Type: ").append(contentType(fileName)).append("\r\n\r\n");
        return s.toString().getBytes(UTF8);
    }

    private static StringBuilder part(StringBuilder s, String boundary, String name) {
        return s.append("--").append(boundary).append("\r\nContent-Disposition: form-data; name=\"")
                .append(quoted(name)).append('"');
    }

    /** A name inside a quoted header parameter: no quote, backslash or line break. */
    private static String quoted(String s) {
        return s.replace("\"", "%22").replace("\\", "%5C").replace("\r", "").replace("\n", "");
    }

    private static void copyExactly(File file, long length, OutputStream out) throws IOException {
        byte[] buf = new byte[64 * 1024];
        long left = length;
        InputStream in = new FileInputStream(file);
        try {
            while (left > 0) {
                int n = in.read(buf, 0, (int) Math.min(buf.length, left));
                if (n <= 0) {
                    throw new IOException(file.getName() + " got shorter while it was sent");
                }
                out.write(buf, 0, n);
                left -= n;
            }
        } finally {
            in.close();
        }
    }

    private static String readAnswer(InputStream in) throws IOException {
        if (in == null) {
            return "";
        }
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        byte[] buf = new byte[1024];
        try {
            int n;
            while (b.size() < ANSWER_LIMIT && (n = in.read(buf, 0, Math.min(buf.length, ANSWER_LIMIT - b.size()))) > 0) {
                b.write(buf, 0, n);
            }
        } finally {
            in.close();
        }
        return new String(b.toByteArray(), UTF8);
    }
}
