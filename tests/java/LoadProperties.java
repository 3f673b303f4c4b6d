// Loads each properties file named on the command line with Properties.load(InputStream),
// as Matrix's analyzer reads result.info (ISO-8859-1, with backslash-u escapes), and prints one
// line per property: file, key and value, the last two as hex of their UTF-8 bytes, so
// that no character is lost or reinterpreted on the way out.

import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Properties;

public class LoadProperties {
    public static void main(String[] args) throws Exception {
        for (String path : args) {
            Properties p = new Properties();
            try (InputStream in = new FileInputStream(path)) {
                p.load(in);
            }
            for (String key : p.stringPropertyNames()) {
                System.out.println(path + "\t" + hex(key) + "\t" + hex(p.getProperty(key)));
            }
        }
    }

    static String hex(String s) {
        StringBuilder out = new StringBuilder();
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            out.append(String.format("%02x", b));
        }
        return out.toString();
    }
}
