// Reads each zip named on the command line as Java's two readers do, java.util.zip's
// ZipInputStream (streaming, local headers only) and ZipFile (central directory), and
// prints one line per entry: reader, zip, entry name, method, length, MD5 of the bytes.
// Any exception ends the program with a non-zero status.

import java.io.FileInputStream;
import java.io.InputStream;
import java.security.MessageDigest;
import java.util.Enumeration;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipInputStream;

public class StreamEntries {
    public static void main(String[] args) throws Exception {
        for (String path : args) {
            try (ZipInputStream in = new ZipInputStream(new FileInputStream(path))) {
                ZipEntry e;
                while ((e = in.getNextEntry()) != null) {
                    print("stream", path, e, in);
                }
            }
            try (ZipFile zf = new ZipFile(path)) {
                Enumeration<? extends ZipEntry> all = zf.entries();
                while (all.hasMoreElements()) {
                    ZipEntry e = all.nextElement();
                    try (InputStream in = zf.getInputStream(e)) {
                        print("file", path, e, in);
                    }
                }
            }
        }
    }

    static void print(String reader, String path, ZipEntry e, InputStream in) throws Exception {
        MessageDigest md5 = MessageDigest.getInstance("MD5");
        byte[] buf = new byte[1 << 16];
        long n = 0;
        int r;
        while ((r = in.read(buf)) > 0) {
            md5.update(buf, 0, r);
            n += r;
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : md5.digest()) {
            hex.append(String.format("%02x", b));
        }
        String method = e.getMethod() == ZipEntry.STORED ? "stored" : "deflated";
        System.out.println(reader + "\t" + path + "\t" + e.getName() + "\t" + method + "\t" + n + "\t" + hex);
    }
}
