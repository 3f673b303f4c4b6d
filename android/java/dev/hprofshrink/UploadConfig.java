package dev.hprofshrink;

/**
 * Where and how {@link Outbox#sendAll(UploadConfig)} uploads: the protocol of the CLI's
 * {@code upload} (docs/upload.md). Each setter returns this config object. Not thread-safe;
 * {@code sendAll} reads it once at its start.
 */
public final class UploadConfig {
    /** The protocol. */
    public enum Method {
        /**
         * {@code multipart/form-data}: a text part for each {@code result.info} key, {@code md5}
         * (hex), then {@code file} (the default; {@code serve}'s {@code POST /api/packages}).
         */
        POST,
        /**
         * The raw zip with {@code Content-MD5} (base64), as a pre-signed URL or {@code serve}'s
         * {@code PUT /api/packages/NAME.zip} takes it. A URL ending in {@code /} gets the
         * package's file name appended; any other is used as it is.
         */
        PUT
    }

    final String url;
    final String token;
    Method method = Method.POST;
    int retries = 5;
    int connectTimeoutMillis = 10_000;
    int readTimeoutMillis = 60_000;
    long maxRetryWaitMillis = 120_000;
    long backoffMillis = 1_000;
    long maxBackoffMillis = 30_000;

    /**
     * @param url {@code http://HOST:8080/api/packages} for {@code serve}
     * @param token sent as {@code Authorization: Bearer TOKEN}, never logged nor put in a
     *     message; null for none
     */
    public UploadConfig(String url, String token) {
        this.url = Options.nonNull(url, "url");
        this.token = token;
    }

    /** The protocol; {@link Method#POST} by default. */
    public UploadConfig method(Method method) {
        this.method = Options.nonNull(method, "method");
        return this;
    }

    /** Retries of one package after its first attempt (default 5). */
    public UploadConfig retries(int retries) {
        this.retries = Math.max(0, retries);
        return this;
    }

    /** To establish a connection (default 10 s). */
    public UploadConfig connectTimeoutMillis(int millis) {
        this.connectTimeoutMillis = Math.max(1, millis);
        return this;
    }

    /** The longest silence of the server while reading its answer (default 60 s). */
    public UploadConfig readTimeoutMillis(int millis) {
        this.readTimeoutMillis = Math.max(1, millis);
        return this;
    }

    /** The longest {@code Retry-After} honoured (default 120 s); a longer one leaves the package for the next run. */
    public UploadConfig maxRetryWaitMillis(long millis) {
        this.maxRetryWaitMillis = Math.max(0, millis);
        return this;
    }

    /**
     * The backoff: the wait before retry n (from 0) is between half and all of
     * {@code base} &times; 2<sup>n</sup>, capped at {@code max}, and never shorter than the
     * server's {@code Retry-After} (defaults 1 s and 30 s, as the CLI's).
     */
    public UploadConfig backoffMillis(long base, long max) {
        this.backoffMillis = Math.max(0, base);
        this.maxBackoffMillis = Math.max(this.backoffMillis, max);
        return this;
    }
}
