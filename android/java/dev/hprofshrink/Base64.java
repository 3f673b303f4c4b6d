package dev.hprofshrink;

/** Base64 of a few bytes (Content-MD5): java.util.Base64 is Android API 26+, this library supports 21. */
final class Base64 {
    private Base64() {}

    private static final char[] ALPHABET =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".toCharArray();

    static String encode(byte[] data) {
        StringBuilder s = new StringBuilder((data.length + 2) / 3 * 4);
        for (int i = 0; i < data.length; i += 3) {
            int b = (data[i] & 0xff) << 16;
            if (i + 1 < data.length) {
                b |= (data[i + 1] & 0xff) << 8;
            }
            if (i + 2 < data.length) {
                b |= data[i + 2] & 0xff;
            }
            s.append(ALPHABET[(b >> 18) & 63]).append(ALPHABET[(b >> 12) & 63]);
            s.append(i + 1 < data.length ? ALPHABET[(b >> 6) & 63] : '=');
            s.append(i + 2 < data.length ? ALPHABET[b & 63] : '=');
        }
        return s.toString();
    }
}
