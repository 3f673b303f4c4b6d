import com.android.ahat.heapdump.AhatArrayInstance;
import com.android.ahat.heapdump.AhatClassObj;
import com.android.ahat.heapdump.AhatHeap;
import com.android.ahat.heapdump.AhatInstance;
import com.android.ahat.heapdump.AhatSnapshot;
import com.android.ahat.heapdump.Parser;
import com.android.ahat.heapdump.PathElement;
import com.android.ahat.heapdump.Reachability;
import com.android.ahat.heapdump.RootType;
import com.android.ahat.heapdump.Size;
import com.android.ahat.heapdump.Value;
import com.android.ahat.proguard.ProguardMap;
import java.io.File;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;

/**
 * What AOSP's ahat says about objects in a heap dump: shallow and retained sizes (total and
 * per heap), the retained object count (ahat's dominator subtree) and ahat's path from a GC
 * root. Objects: every objectId of the NAME.leaks.json beside the dump (or --leaks FILE),
 * every instance of the classes given, and the referents of Matrix's DestroyedActivityInfo
 * and LeakCanary's KeyedWeakReference records.
 *
 * Usage: oracle.sh DUMP.hprof[.gz] [--leaks LEAKS.json] [--json OUT.json] [CLASS ...]
 */
public final class Oracle {
  public static void main(String[] args) throws Exception {
    String dump = null, leaks = null, json = null;
    List<String> classes = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--leaks": leaks = args[++i]; break;
        case "--json": json = args[++i]; break;
        default:
          if (dump == null) dump = args[i]; else classes.add(args[i]);
      }
    }
    if (dump == null) {
      System.err.println("usage: oracle.sh DUMP.hprof[.gz] [--leaks LEAKS.json] [--json OUT] [CLASS ...]");
      System.exit(2);
    }
    String stem = dump.replaceAll("\\.hprof(\\.gz)?$", "");
    if (leaks == null && new File(stem + ".leaks.json").exists()) leaks = stem + ".leaks.json";

    byte[] bytes = Files.readAllBytes(new File(dump).toPath());
    if (dump.endsWith(".gz")) {
      try (InputStream in = new GZIPInputStream(new java.io.ByteArrayInputStream(bytes))) {
        bytes = in.readAllBytes();
      }
    }
    AhatSnapshot snap;
    try {
      // Retained over strong references only, as DESIGN's analyzer counts (ahat's default,
      // SOFT, would follow soft references too).
      snap = new Parser(ByteBuffer.wrap(bytes)).map(new ProguardMap())
          .retained(Reachability.STRONG).parse();
    } catch (Exception e) {
      System.out.println("ahat REJECTS " + dump + ": " + e);
      System.exit(1);
      return;
    }
    System.out.println("ahat opens " + dump + " (" + bytes.length + " bytes)");
    StringBuilder heapList = new StringBuilder();
    for (AhatHeap h : snap.getHeaps()) {
      heapList.append(' ').append(h.getName()).append('=').append(h.getSize().getSize());
    }
    System.out.println("heaps (shallow bytes):" + heapList);
    printSizeConvention(snap);

    // Which objects: by id, by class, and by the watchers' referents.
    Map<Long, String> targets = new LinkedHashMap<>();
    if (leaks != null) {
      String text = new String(Files.readAllBytes(new File(leaks).toPath()), StandardCharsets.UTF_8);
      Matcher m = Pattern.compile("\"objectId\"\\s*:\\s*(\\d+)").matcher(text);
      while (m.find()) targets.put(Long.parseLong(m.group(1)), "listed in " + leaks);
    }
    List<Map<String, Object>> watchers = new ArrayList<>();
    for (AhatInstance inst : allInstances(snap)) {
      if (inst.isClassObj()) continue;
      for (String c : classes) {
        if (inst.isInstanceOfClass(c)) targets.putIfAbsent(inst.getId(), "instance of " + c);
      }
      String cls = inst.getClassName();
      if (cls.endsWith(".DestroyedActivityInfo")) {
        AhatInstance ref = inst.getRefField("mActivityRef");
        watchers.add(watcher("DestroyedActivityInfo", inst.getRefField("mKey"),
            ref == null ? null : ref.getReferent(), null));
      } else if (cls.equals("leakcanary.KeyedWeakReference")) {
        Value retained = inst.getField("retainedUptimeMillis");
        watchers.add(watcher("KeyedWeakReference", inst.getRefField("key"), inst.getReferent(),
            retained == null ? null : retained.asLong()));
      }
    }

    System.out.println();
    System.out.println("watchers:");
    for (Map<String, Object> w : watchers) System.out.println("  " + w);

    List<String> objectJson = new ArrayList<>();
    for (Map.Entry<Long, String> t : targets.entrySet()) {
      AhatInstance inst = snap.findInstance(t.getKey());
      System.out.println();
      if (inst == null) {
        System.out.println("object " + t.getKey() + " (" + t.getValue() + "): NOT IN THE DUMP");
        objectJson.add("{\"objectId\": " + t.getKey() + ", \"missing\": true}");
        continue;
      }
      objectJson.add(describe(snap, inst, t.getValue()));
    }
    if (json != null) {
      StringBuilder out = new StringBuilder();
      out.append("{\n  \"schema\": 1,\n  \"tool\": \"ahat (AOSP art/tools/ahat) via scripts/ahat-oracle\",\n");
      out.append("  \"dump\": ").append(q(new File(dump).getName())).append(",\n");
      out.append("  \"sizeConvention\": ").append(q(SIZE_CONVENTION)).append(",\n");
      out.append("  \"watchers\": [");
      for (int i = 0; i < watchers.size(); i++) {
        out.append(i == 0 ? "\n    " : ",\n    ").append(mapJson(watchers.get(i)));
      }
      out.append("\n  ],\n  \"objects\": [");
      for (int i = 0; i < objectJson.size(); i++) {
        out.append(i == 0 ? "\n    " : ",\n    ").append(objectJson.get(i));
      }
      out.append("\n  ]\n}\n");
      Files.write(new File(json).toPath(), out.toString().getBytes(StandardCharsets.UTF_8));
      System.out.println();
      System.out.println("wrote " + json);
    }
  }

  static final String SIZE_CONVENTION =
      "shallow = the CLASS_DUMP instance size of the object's class + extra, where extra is 0 for an"
      + " instance, length x element size (id size for references) for an array (no header beyond"
      + " the array class's own instance size, which ART writes as 0), and the sum of the static"
      + " field value sizes for a class object (plus java.lang.Class's instance size, 0 on ART);"
      + " registered native sizes (sun.misc.Cleaner / NativeAllocationRegistry) count separately."
      + " retained = sum of shallow sizes of the object's dominator subtree over the strongly"
      + " reachable graph, per heap. This oracle runs ahat with Parser.retained(STRONG): no"
      + " soft/weak/phantom/finalizer referent is followed (ahat's own default, SOFT, follows"
      + " soft references too).";

  static void printSizeConvention(AhatSnapshot snap) {
    System.out.println("size convention: " + SIZE_CONVENTION);
    // One example of each shape, so the formula can be checked against the numbers.
    boolean inst = false, prim = false, objArr = false, cls = false;
    for (AhatInstance i : allInstances(snap)) {
      String kind = null;
      long base = i.getClassObj() == null ? 0 : i.getClassObj().getInstanceSize();
      if (i.isClassObj() && !cls) {
        cls = true;
        kind = "class object " + i.asClassObj().getName() + ": java.lang.Class instance size "
            + base + " + statics";
      } else if (i.isArrayInstance() && !i.isClassObj()) {
        AhatArrayInstance a = i.asArrayInstance();
        boolean isObj = i.getClassName().endsWith("[]")
            && !i.getClassName().matches("(boolean|byte|char|short|int|long|float|double)\\[\\]");
        if (isObj ? objArr : prim) continue;
        if (isObj) objArr = true; else prim = true;
        kind = i.getClassName() + " length " + a.getLength() + ": array class instance size "
            + base + " + length x element";
      } else if (i.isClassInstance() && !inst) {
        inst = true;
        kind = i.getClassName() + ": class instance size " + base;
      }
      if (kind != null) {
        System.out.println("  e.g. " + kind + " -> shallow " + i.getSize().getJavaSize());
      }
      if (inst && prim && objArr && cls) break;
    }
  }

  static Map<String, Object> watcher(String kind, AhatInstance key, AhatInstance referent,
      Long retainedUptime) {
    Map<String, Object> w = new LinkedHashMap<>();
    w.put("kind", kind);
    w.put("key", key == null ? null : key.asString());
    w.put("referentId", referent == null ? null : referent.getId());
    w.put("referentClass", referent == null ? null : referent.getClassName());
    w.put("referentReachability", referent == null ? null : referent.getReachability().toString());
    if (retainedUptime != null) w.put("retainedUptimeMillis", retainedUptime);
    return w;
  }

  static String describe(AhatSnapshot snap, AhatInstance inst, String why) {
    Size shallow = inst.getSize();
    Size total = inst.getTotalRetainedSize();
    long count = retainedObjects(inst);
    System.out.println(inst + " (" + why + ")");
    System.out.println("  class " + inst.getClassName() + ", heap "
        + (inst.getHeap() == null ? "?" : inst.getHeap().getName())
        + ", reachability " + inst.getReachability());
    System.out.println("  shallow " + shallow.getJavaSize() + " bytes (native "
        + shallow.getRegisteredNativeSize() + ")");
    StringBuilder perHeap = new StringBuilder();
    StringBuilder perHeapJson = new StringBuilder();
    for (AhatHeap h : snap.getHeaps()) {
      long b = inst.getRetainedSize(h).getSize();
      if (b == 0) continue;
      perHeap.append(' ').append(h.getName()).append('=').append(b);
      perHeapJson.append(perHeapJson.length() == 0 ? "" : ", ").append(q(h.getName())).append(": ").append(b);
    }
    System.out.println("  retained " + total.getJavaSize() + " bytes (native "
        + total.getRegisteredNativeSize() + "), " + count + " objects; per heap:" + perHeap);
    List<PathElement> path = inst.getPathFromGcRoot();
    StringBuilder pathJson = new StringBuilder();
    String roots = "";
    if (path == null) {
      System.out.println("  path: none (unreachable)");
    } else {
      AhatInstance first = path.get(0).instance;
      List<String> rt = new ArrayList<>();
      if (first.getRootTypes() != null) {
        for (RootType r : first.getRootTypes()) rt.add(r.toString());
      }
      roots = String.join(",", rt);
      System.out.println("  path from GC root (root types of the first object: " + roots + "):");
      for (PathElement e : path) {
        String cls = e.instance.isClassObj()
            ? "class " + e.instance.asClassObj().getName() : e.instance.getClassName();
        System.out.println("    " + (e.isDominator ? "* " : "  ") + e.instance
            + (e.field.isEmpty() ? "" : " " + e.field));
        pathJson.append(pathJson.length() == 0 ? "" : ", ")
            .append("{\"object\": ").append(q(e.instance.toString()))
            .append(", \"class\": ").append(q(cls))
            .append(", \"isClassObject\": ").append(e.instance.isClassObj())
            .append(", \"reference\": ").append(q(e.field))
            .append(", \"dominator\": ").append(e.isDominator).append('}');
      }
    }
    return "{\"objectId\": " + inst.getId()
        + ", \"class\": " + q(inst.getClassName())
        + ", \"heap\": " + q(inst.getHeap() == null ? null : inst.getHeap().getName())
        + ", \"reachability\": " + q(inst.getReachability().toString())
        + ", \"shallowBytes\": " + shallow.getJavaSize()
        + ", \"retainedBytes\": " + total.getJavaSize()
        + ", \"retainedNativeBytes\": " + total.getRegisteredNativeSize()
        + ", \"retainedObjects\": " + count
        + ", \"retainedBytesByHeap\": {" + perHeapJson + "}"
        + ", \"rootTypes\": " + q(roots)
        + ", \"path\": " + (path == null ? "null" : "[" + pathJson + "]") + "}";
  }

  /** The size of the object's subtree in ahat's dominator tree, itself included. */
  static long retainedObjects(AhatInstance root) {
    long n = 0;
    Deque<AhatInstance> todo = new ArrayDeque<>();
    todo.push(root);
    while (!todo.isEmpty()) {
      AhatInstance i = todo.pop();
      n++;
      for (AhatInstance d : i.getDominated()) todo.push(d);
    }
    return n;
  }

  /** Every object ahat knows, found by walking from the roots through all references. */
  static List<AhatInstance> allInstances(AhatSnapshot snap) {
    if (ALL != null) return ALL;
    List<AhatInstance> out = new ArrayList<>();
    java.util.Set<Long> seen = new java.util.HashSet<>();
    Deque<AhatInstance> todo = new ArrayDeque<>(snap.getRooted());
    for (AhatInstance r : todo) seen.add(r.getId());
    while (!todo.isEmpty()) {
      AhatInstance i = todo.pop();
      out.add(i);
      List<AhatInstance> next = new ArrayList<>();
      next.addAll(i.getDominated());
      if (i.isClassObj()) {
        for (com.android.ahat.heapdump.FieldValue f : i.asClassObj().getStaticFieldValues()) {
          if (f.value != null && f.value.isAhatInstance()) next.add(f.value.asAhatInstance());
        }
      }
      if (i.getReferent() != null) next.add(i.getReferent());
      for (AhatInstance n : next) {
        if (n != null && seen.add(n.getId())) todo.push(n);
      }
    }
    out.sort((a, b) -> Long.compare(a.getId(), b.getId()));
    ALL = out;
    return out;
  }

  static List<AhatInstance> ALL;

  static String mapJson(Map<String, Object> m) {
    StringBuilder s = new StringBuilder("{");
    for (Map.Entry<String, Object> e : m.entrySet()) {
      if (s.length() > 1) s.append(", ");
      s.append(q(e.getKey())).append(": ");
      Object v = e.getValue();
      s.append(v instanceof String || v == null ? q((String) v) : v.toString());
    }
    return s.append('}').toString();
  }

  static String q(String s) {
    if (s == null) return "null";
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') out.append('\\').append(c);
      else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
      else out.append(c);
    }
    return out.append('"').toString();
  }
}
