package dev.hprofshrink.tests;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * A plain test runner (no JUnit needed): runs every public no-argument method named
 * {@code test...} of the given classes, each on a fresh instance, and exits 1 if any failed.
 *
 * <pre>java dev.hprofshrink.tests.Runner CLASS... [-- FILTER]</pre>
 */
public final class Runner {
    public static void main(String[] args) throws Exception {
        List<Class<?>> classes = new ArrayList<>();
        String filter = "";
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--") && i + 1 < args.length) {
                filter = args[i + 1];
                break;
            }
            classes.add(Class.forName(args[i]));
        }
        int passed = 0;
        List<String> failed = new ArrayList<>();
        for (Class<?> c : classes) {
            Method[] methods = c.getMethods();
            Arrays.sort(methods, Comparator.comparing(Method::getName));
            for (Method m : methods) {
                String name = c.getSimpleName() + "." + m.getName();
                if (!m.getName().startsWith("test") || m.getParameterCount() != 0
                        || Modifier.isStatic(m.getModifiers()) || !name.contains(filter)) {
                    continue;
                }
                long start = System.nanoTime();
                try {
                    Object instance = c.getDeclaredConstructor().newInstance();
                    try {
                        m.invoke(instance);
                    } finally {
                        if (instance instanceof AutoCloseable) {
                            ((AutoCloseable) instance).close();
                        }
                    }
                    passed++;
                    System.out.printf("ok   %s (%d ms)%n", name, (System.nanoTime() - start) / 1_000_000);
                } catch (InvocationTargetException e) {
                    failed.add(name);
                    System.out.printf("FAIL %s: %s%n", name, e.getCause());
                    e.getCause().printStackTrace(System.out);
                }
            }
        }
        System.out.printf("%d passed, %d failed%s%n", passed, failed.size(), failed.isEmpty() ? "" : ": " + failed);
        if (passed == 0 || !failed.isEmpty()) {
            System.exit(1);
        }
    }
}
