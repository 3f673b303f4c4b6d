package dev.hprofshrink.tests;

import dev.hprofshrink.Outbox;
import java.io.File;

/** A JVM that sends an outbox once (the kill -9 test runs it): {@code SendOnce DIR URL TOKEN}. */
public final class SendOnce {
    public static void main(String[] args) {
        System.out.println("SendOnce: " + new Outbox(new File(args[0])).sendAll(args[1], args[2]));
    }
}
