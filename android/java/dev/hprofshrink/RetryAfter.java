package dev.hprofshrink;

import java.text.ParseException;
import java.text.SimpleDateFormat;
import java.util.Date;
import java.util.Locale;
import java.util.TimeZone;

/** A {@code Retry-After} header: seconds, or an HTTP-date. */
final class RetryAfter {
    private RetryAfter() {}

    /** Milliseconds to wait, -1 when absent or unreadable; a date in the past is 0. */
    static long parseMillis(String value) {
        if (value == null) {
            return -1;
        }
        String v = value.trim();
        if (!v.isEmpty() && v.length() <= 10 && isDigits(v)) {
            return Long.parseLong(v) * 1000;
        }
        SimpleDateFormat f = new SimpleDateFormat("EEE, dd MMM yyyy HH:mm:ss zzz", Locale.US);
        f.setTimeZone(TimeZone.getTimeZone("GMT"));
        try {
            Date d = f.parse(v);
            return Math.max(0, d.getTime() - System.currentTimeMillis());
        } catch (ParseException e) {
            return -1;
        }
    }

    private static boolean isDigits(String s) {
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') {
                return false;
            }
        }
        return true;
    }
}
