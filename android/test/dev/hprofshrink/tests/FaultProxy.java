package dev.hprofshrink.tests;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP proxy in front of {@code serve} that plays a scripted fault on each new connection, then
 * forwards the rest: a server answering 503, or one that dies mid-upload.
 */
final class FaultProxy implements AutoCloseable {
    enum Fault {
        /** Reads the request, answers 503 with Retry-After: 0, closes. */
        ANSWER_503,
        /** Reads the request's head and 1 KiB of its body, then resets the connection (a server killed mid-upload). */
        DIE_MID_BODY,
        /** Forwards the connection to serve. */
        FORWARD
    }

    private final ServerSocket server;
    private final int target;
    private final Deque<Fault> script = new ArrayDeque<>();
    final AtomicInteger connections = new AtomicInteger();

    FaultProxy(int target, Fault... faults) throws IOException {
        this.target = target;
        for (Fault f : faults) {
            script.add(f);
        }
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::accept, "fault proxy");
        t.setDaemon(true);
        t.start();
    }

    String url(String path) {
        return "http://127.0.0.1:" + server.getLocalPort() + path;
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                connections.incrementAndGet();
                Fault f;
                synchronized (script) {
                    f = script.isEmpty() ? Fault.FORWARD : script.poll();
                }
                Thread t = new Thread(() -> handle(s, f), "fault proxy " + f);
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private void handle(Socket s, Fault f) {
        try {
            switch (f) {
                case ANSWER_503: {
                    InputStream in = s.getInputStream();
                    long length = contentLength(readHead(in));
                    in.skipNBytes(length);
                    byte[] body = "{\"error\":\"busy, try again\"}".getBytes(StandardCharsets.UTF_8);
                    OutputStream out = s.getOutputStream();
                    out.write(("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\nContent-Type: application/json\r\n"
                            + "Content-Length: " + body.length + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                    out.write(body);
                    out.flush();
                    s.close();
                    break;
                }
                case DIE_MID_BODY: {
                    InputStream in = s.getInputStream();
                    readHead(in);
                    in.readNBytes(1024);
                    s.setSoLinger(true, 0); // a reset, as from a killed process
                    s.close();
                    break;
                }
                default:
                    forward(s);
            }
        } catch (IOException e) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing a broken socket
            }
        }
    }

    private void forward(Socket client) throws IOException {
        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), target);
        Thread up = new Thread(() -> pump(client, upstream), "proxy up");
        up.setDaemon(true);
        up.start();
        pump(upstream, client);
    }

    private static void pump(Socket from, Socket to) {
        try {
            from.getInputStream().transferTo(to.getOutputStream());
            to.shutdownOutput();
        } catch (IOException e) {
            try {
                from.close();
                to.close();
            } catch (IOException ignored) {
                // both ends are going
            }
        }
    }

    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int state = 0;
        while (state < 4) {
            int c = in.read();
            if (c < 0) {
                throw new IOException("the request ended in its head");
            }
            b.write(c);
            state = (c == '\r' && (state == 0 || state == 2)) || (c == '\n' && (state == 1 || state == 3)) ? state + 1 : 0;
        }
        return b.toString(StandardCharsets.US_ASCII);
    }

    private static long contentLength(String head) {
        for (String line : head.split("\r\n")) {
            int colon = line.indexOf(':');
            if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase("content-length")) {
                return Long.parseLong(line.substring(colon + 1).trim());
            }
        }
        return 0;
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
