package dev.hprofshrink;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** What {@link Outbox#sendAll} did, package by package. */
public final class SendReport {
    final List<String> sent = new ArrayList<String>();
    final List<String> rejected = new ArrayList<String>();
    final List<String> failed = new ArrayList<String>();
    final List<String> untried = new ArrayList<String>();
    boolean busy;
    String stopped;

    SendReport() {}

    /** The file names of the packages the server took (2xx), now deleted from the outbox. */
    public List<String> getSent() {
        return Collections.unmodifiableList(sent);
    }

    /**
     * The packages the server refused for good (422: not a package it takes; 413: too large),
     * or that are no package at all: moved to {@code rejected/} with the reason beside each as
     * {@code NAME.zip.txt}, never sent again. One line each: the name and why.
     */
    public List<String> getRejected() {
        return Collections.unmodifiableList(rejected);
    }

    /** The packages left in the outbox after their attempts failed, one line each: the name and why. */
    public List<String> getFailed() {
        return Collections.unmodifiableList(failed);
    }

    /** The packages not tried because the run stopped (see {@link #getStopped()}); still in the outbox. */
    public List<String> getUntried() {
        return Collections.unmodifiableList(untried);
    }

    /** Whether another {@code sendAll} (this process's or another's) was sending this outbox, so this one sent nothing. */
    public boolean isBusy() {
        return busy;
    }

    /** Why the run stopped before the last package, or null if it did not. */
    public String getStopped() {
        return stopped;
    }

    /** Nothing was left behind: no package failed, went untried or was rejected, and the outbox was not busy. */
    public boolean isClean() {
        return !busy && failed.isEmpty() && untried.isEmpty() && rejected.isEmpty();
    }

    @Override
    public String toString() {
        return "sent " + sent + ", rejected " + rejected + ", failed " + failed + ", untried " + untried
                + (busy ? ", busy" : "") + (stopped != null ? ", stopped: " + stopped : "");
    }
}
