/*
 * The C ABI of hprof-shrink used the way an app would: shrink a fixture and check the
 * report against the fixture's facts, cancel a second shrink from another thread while it
 * writes and check that no file is left, and check the codes and messages of bad calls.
 *
 *   shrink_test FIXTURES_DIR WORK_DIR
 *
 * WORK_DIR must exist and be empty. Prints what it checked; exits 1 on the first failure.
 * Built and run by scripts/c-test.sh.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hprof_shrink.h"

static int checks;

/* Prints "ok  WHAT" or "FAIL WHAT" and stops at the first failure. */
static void check(int ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("  %s ", ok ? "ok  " : "FAIL");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  checks++;
  if (!ok) exit(1);
}

static const char *or_null(const char *s) { return s ? s : "(NULL)"; }

/* dir/name into out, or exit: a cut path would test the wrong file. */
static void join(char *out, size_t n, const char *dir, const char *name) {
  int len = snprintf(out, n, "%s/%s", dir, name);
  if (len < 0 || (size_t)len >= n) {
    fprintf(stderr, "path too long: %s/%s\n", dir, name);
    exit(2);
  }
}

/* ---- just enough JSON to read the report and the facts: look values up by path ---- */

static const char *skip_ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++;
  return p;
}

/* p at '"'; returns the character after the closing quote, or NULL. */
static const char *skip_string(const char *p) {
  for (p++; *p; p++) {
    if (*p == '\\' && p[1]) p++;
    else if (*p == '"') return p + 1;
  }
  return NULL;
}

static const char *skip_value(const char *p) {
  p = skip_ws(p);
  if (*p == '"') return skip_string(p);
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    p = skip_ws(p + 1);
    if (*p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        if (*p != '"' || !(p = skip_string(p))) return NULL;
        p = skip_ws(p);
        if (*p++ != ':') return NULL;
      }
      if (!(p = skip_value(p))) return NULL;
      p = skip_ws(p);
      if (*p == close) return p + 1;
      if (*p++ != ',') return NULL;
      p = skip_ws(p);
    }
  }
  /* number, true, false, null */
  const char *start = p;
  while (*p && !strchr(",}] \n\r\t", *p)) p++;
  return p > start ? p : NULL;
}

/* The value at a dotted path ("bitmaps.merged") of an object, or NULL. */
static const char *json_get(const char *json, const char *path) {
  const char *p = skip_ws(json);
  while (*path) {
    const char *dot = strchr(path, '.');
    size_t len = dot ? (size_t)(dot - path) : strlen(path);
    if (*p != '{') return NULL;
    p = skip_ws(p + 1);
    const char *found = NULL;
    while (*p == '"' && !found) {
      const char *key = p + 1, *end = skip_string(p);
      if (!end) return NULL;
      p = skip_ws(end);
      if (*p++ != ':') return NULL;
      p = skip_ws(p);
      if ((size_t)(end - 1 - key) == len && strncmp(key, path, len) == 0) {
        found = p;
        break;
      }
      if (!(p = skip_value(p))) return NULL;
      p = skip_ws(p);
      if (*p == ',') p = skip_ws(p + 1);
    }
    if (!found) return NULL;
    p = found;
    path += len + (dot ? 1 : 0);
  }
  return p;
}

static int json_u64(const char *json, const char *path, uint64_t *out) {
  const char *v = json_get(json, path);
  if (!v || *v < '0' || *v > '9') return 0;
  *out = strtoull(v, NULL, 10);
  return 1;
}

/* Copies a string value without escapes into buf; 0 if absent, not a string or escaped. */
static int json_str(const char *json, const char *path, char *buf, size_t n) {
  const char *v = json_get(json, path);
  if (!v || *v != '"') return 0;
  const char *end = skip_string(v);
  if (!end) return 0;
  size_t len = (size_t)(end - v - 2);
  if (len >= n || memchr(v + 1, '\\', len)) return 0;
  memcpy(buf, v + 1, len);
  buf[len] = 0;
  return 1;
}

static char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  do {
    if (len + 4096 + 1 > cap) {
      cap = cap ? cap * 2 : 65536;
      char *grown = realloc(buf, cap);
      if (!grown) { free(buf); fclose(f); return NULL; }
      buf = grown;
    }
    n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
  } while (n > 0);
  fclose(f);
  buf[len] = 0;
  if (size) *size = len;
  return buf;
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Number of entries in dir (without . and ..); the first one's name in first. */
static int dir_entries(const char *dir, char *first, size_t n) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int count = 0;
  struct dirent *e;
  if (first && n) first[0] = 0;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (count++ == 0 && first && n) snprintf(first, n, "%s", e->d_name);
  }
  closedir(d);
  return count;
}

static int has_suffix(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int memmem_found(const char *hay, size_t n, const char *needle) {
  size_t m = strlen(needle);
  for (size_t i = 0; i + m <= n; i++)
    if (memcmp(hay + i, needle, m) == 0) return 1;
  return 0;
}

static double ms_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

static const char *stage_name(hprof_shrink_stage s) {
  switch (s) {
    case HPROF_SHRINK_STAGE_INFO: return "info";
    case HPROF_SHRINK_STAGE_COLLECT: return "collect";
    case HPROF_SHRINK_STAGE_RESOLVE: return "resolve";
    case HPROF_SHRINK_STAGE_DEDUP: return "dedup";
    case HPROF_SHRINK_STAGE_WRITE: return "write";
    default: return "?";
  }
}

/* ---- 1. bad calls ---- */

static void bad_calls(const char *work) {
  printf("[1] bad calls get a code and a message, never a crash\n");
  hprof_shrink_job *job = hprof_shrink_job_new();
  check(job != NULL, "hprof_shrink_job_new");

  hprof_shrink_status s = hprof_shrink_job_run(job, NULL, NULL, NULL);
  const char *msg = hprof_shrink_job_error_message(job);
  check(s == HPROF_SHRINK_ERR_INVALID_ARGUMENT && msg && strstr(msg, "options is NULL"),
        "NULL options -> %s: \"%s\"", hprof_shrink_status_name(s), or_null(msg));
  check(hprof_shrink_job_report_json(job) == NULL, "no report after a failed run");

  hprof_shrink_options o;
  hprof_shrink_options_init(&o);
  s = hprof_shrink_job_run(NULL, &o, NULL, NULL);
  check(s == HPROF_SHRINK_ERR_INVALID_ARGUMENT, "NULL job -> %s", hprof_shrink_status_name(s));
  check(hprof_shrink_options_init(NULL) == HPROF_SHRINK_ERR_INVALID_ARGUMENT,
        "hprof_shrink_options_init(NULL) -> HPROF_SHRINK_ERR_INVALID_ARGUMENT");
  hprof_shrink_job_cancel(NULL);
  hprof_shrink_job_free(NULL);
  check(hprof_shrink_job_error_message(NULL) == NULL && hprof_shrink_job_report_json(NULL) == NULL,
        "cancel, free, error_message and report_json accept NULL");

  char missing[4096], zip[4096];
  join(missing, sizeof missing, work, "missing.hprof");
  join(zip, sizeof zip, work, "missing.zip");
  o.input_path = missing;
  o.zip_path = zip;
  s = hprof_shrink_job_run(job, &o, NULL, NULL);
  msg = hprof_shrink_job_error_message(job);
  check(s == HPROF_SHRINK_ERR_IO && msg && strstr(msg, "missing.hprof"),
        "missing input -> %s: \"%s\"", hprof_shrink_status_name(s), or_null(msg));

  o.level = 12;
  s = hprof_shrink_job_run(job, &o, NULL, NULL);
  msg = hprof_shrink_job_error_message(job);
  check(s == HPROF_SHRINK_ERR_INVALID_ARGUMENT && msg && strstr(msg, "level"),
        "level 12 -> %s: \"%s\"", hprof_shrink_status_name(s), or_null(msg));
  o.level = 6;

  /* Neither this header's size nor an earlier one's (which ended before private_package). */
  o.struct_size = sizeof o + 8;
  s = hprof_shrink_job_run(job, &o, NULL, NULL);
  msg = hprof_shrink_job_error_message(job);
  check(s == HPROF_SHRINK_ERR_INVALID_ARGUMENT && msg && strstr(msg, "struct_size"),
        "struct_size %zu -> %s", o.struct_size, hprof_shrink_status_name(s));
  o.struct_size = sizeof o;

  char junk[4096];
  join(junk, sizeof junk, work, "junk.hprof");
  FILE *f = fopen(junk, "wb");
  check(f != NULL, "write %s", junk);
  fputs("JAVA PROFILE 9.9\n not a heap dump", f);
  fclose(f);
  o.input_path = junk;
  s = hprof_shrink_job_run(job, &o, NULL, NULL);
  msg = hprof_shrink_job_error_message(job);
  check(s == HPROF_SHRINK_ERR_BAD_INPUT && msg && strstr(msg, "junk.hprof"),
        "not a dump -> %s: \"%s\"", hprof_shrink_status_name(s), or_null(msg));
  remove(junk);

  char first[256];
  check(dir_entries(work, first, sizeof first) == 0, "no file left in the work directory");
  hprof_shrink_job_free(job);
}

/* ---- 2. a shrink, checked against the fixture's facts ---- */

struct progress_log {
  pthread_t caller; /* the thread that runs the shrink: every report must come on it */
  int reports, other_threads, stages_in_order, last_stage, done_le_total;
  uint64_t last_done, last_total;
  char stages[128]; /* the stages reported, in order */
};

static void log_progress(void *user_data, hprof_shrink_stage stage, uint64_t done, uint64_t total) {
  struct progress_log *p = user_data;
  if (!pthread_equal(pthread_self(), p->caller)) p->other_threads++;
  if (p->reports++ > 0 && stage < p->last_stage) p->stages_in_order = 0;
  if (p->reports == 1 || stage != p->last_stage) {
    size_t used = strlen(p->stages);
    snprintf(p->stages + used, sizeof p->stages - used, "%s%s", used ? " > " : "",
             stage_name(stage));
  }
  if (done > total) p->done_le_total = 0;
  p->last_stage = stage;
  p->last_done = done;
  p->last_total = total;
}

static void facts_u64(const char *report, const char *path, const char *facts, const char *fact,
                      uint64_t minus_fact_value) {
  uint64_t got = 0, want = 0;
  int ok = json_u64(report, path, &got) && json_u64(facts, fact, &want);
  want -= minus_fact_value;
  check(ok && got == want, "%s = %" PRIu64 ", the facts say %" PRIu64, path, got, want);
}

static void facts_str(const char *report, const char *path, const char *facts, const char *fact) {
  char got[512] = "", want[512] = "";
  int ok = json_str(report, path, got, sizeof got) && json_str(facts, fact, want, sizeof want);
  check(ok && strcmp(got, want) == 0, "%s = \"%s\", as the facts say", path, got);
}

static void shrink_and_check(const char *fixtures, const char *work) {
  char input[4096], facts_path[4096], zip[4096];
  join(input, sizeof input, fixtures, "art-api25.hprof");
  join(facts_path, sizeof facts_path, fixtures, "art-api25.facts.json");
  join(zip, sizeof zip, work, "art-api25.zip");
  printf("[2] shrink art-api25.hprof into a zip; the report against art-api25.facts.json\n");
  char *facts = read_file(facts_path, NULL);
  check(facts != NULL, "read %s", facts_path);

  hprof_shrink_options o;
  hprof_shrink_options_init(&o);
  o.input_path = input;
  o.zip_path = zip;
  o.strip = HPROF_SHRINK_STRIP_BITMAPS;
  o.dropped = HPROF_SHRINK_DROPPED_EMPTY;
  o.level = 9;
  o.threads = 3; /* the shrink runs on workers too; reports must still come on this thread */
  hprof_shrink_property extra[] = {{"appVersion", "1.2.3"}, {"trigger", "activity leak"}};
  o.extra = extra;
  o.extra_count = 2;

  hprof_shrink_job *job = hprof_shrink_job_new();
  struct progress_log p = {pthread_self(), 0, 0, 1, -1, 1, 0, 0, ""};
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  hprof_shrink_status s = hprof_shrink_job_run(job, &o, log_progress, &p);
  double ms = ms_since(&t0);
  check(s == HPROF_SHRINK_OK, "status %s in %.0f ms (message: %s)", hprof_shrink_status_name(s),
        ms, or_null(hprof_shrink_job_error_message(job)));
  check(p.reports > 0 && p.other_threads == 0,
        "with 3 threads, all %d progress reports came on the calling thread", p.reports);
  check(p.reports >= 3 && p.stages_in_order && p.done_le_total &&
            p.last_stage == HPROF_SHRINK_STAGE_WRITE && p.last_done == p.last_total,
        "%d progress reports, stages in order (%s), the last at write %" PRIu64 "/%" PRIu64
        " bytes",
        p.reports, p.stages, p.last_done, p.last_total);

  const char *report = hprof_shrink_job_report_json(job);
  check(report != NULL, "report JSON, %zu bytes", report ? strlen(report) : 0);
  check(json_get(report, "schema") && strncmp(json_get(report, "schema"), "1", 1) == 0,
        "schema 1");
  facts_u64(report, "bitmaps.instances", facts, "bitmaps", 0);
  facts_u64(report, "bitmaps.recycled", facts, "recycledBitmaps", 0);
  facts_u64(report, "bitmaps.with_buffer", facts, "liveBuffers", 0);
  facts_u64(report, "bitmaps.distinct_contents", facts, "distinctLiveBuffers", 0);
  facts_u64(report, "bitmaps.kept", facts, "distinctLiveBuffers", 0);
  uint64_t distinct = 0;
  json_u64(facts, "distinctLiveBuffers", &distinct);
  facts_u64(report, "bitmaps.merged", facts, "liveBuffers", distinct);
  facts_u64(report, "strings.instances", facts, "strings", 0);
  uint64_t sdk = 0;
  char sdk_text[32] = "", want_sdk[32];
  check(json_u64(facts, "sdkVersion", &sdk) &&
            json_str(report, "manifest.sdkVersion", sdk_text, sizeof sdk_text) &&
            snprintf(want_sdk, sizeof want_sdk, "%" PRIu64, sdk) > 0 && !strcmp(sdk_text, want_sdk),
        "manifest.sdkVersion = \"%s\", read from the dump as the facts say", sdk_text);
  facts_str(report, "manifest.manufacturer", facts, "manufacturer");
  facts_str(report, "manifest.leakedActivityKey", facts, "leakedActivityKey");
  char text[64];
  check(json_str(report, "options.dropped", text, sizeof text) && !strcmp(text, "empty"),
        "options.dropped = \"%s\", as asked", text);

  uint64_t zip_bytes = 0, input_bytes = 0;
  struct stat st;
  /* Read before the checks: the order in which arguments are evaluated is unspecified. */
  int have_sizes = json_u64(report, "output.zip_bytes", &zip_bytes) &&
                   json_u64(report, "input.bytes", &input_bytes) && stat(zip, &st) == 0;
  check(have_sizes && (uint64_t)st.st_size == zip_bytes,
        "the zip is %" PRIu64 " bytes, as the report says", zip_bytes);
  check(have_sizes && zip_bytes < input_bytes / 4,
        "the zip is under a quarter of the %" PRIu64 "-byte input", input_bytes);
  size_t zip_len = 0;
  char *zip_data = read_file(zip, &zip_len);
  check(zip_data && zip_len > 4 && !memcmp(zip_data, "PK\3\4", 4) &&
            memmem_found(zip_data, zip_len, "result.info") &&
            memmem_found(zip_data, zip_len, "extra.info"),
        "the zip holds result.info and extra.info");
  free(zip_data);
  check(remove(zip) == 0, "remove the zip");
  hprof_shrink_job_free(job);
  free(facts);
}

/* ---- 3. cancel from a second thread while the shrink writes ---- */

struct canceller {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int requested, done;
  hprof_shrink_job *job;
  const char *dir;
  char tmp_seen[256];
  uint64_t at_done, at_total;
};

static void *cancel_thread(void *arg) {
  struct canceller *c = arg;
  pthread_mutex_lock(&c->lock);
  while (!c->requested) pthread_cond_wait(&c->cond, &c->lock);
  pthread_mutex_unlock(&c->lock);
  hprof_shrink_job_cancel(c->job); /* from this thread, while the run goes on in the other */
  pthread_mutex_lock(&c->lock);
  c->done = 1;
  pthread_cond_broadcast(&c->cond);
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

/* On the first write report: note the temporary output, then have the other thread cancel
 * and wait until it has, so the run's next check sees the flag. */
static void cancel_on_write(void *user_data, hprof_shrink_stage stage, uint64_t done,
                            uint64_t total) {
  struct canceller *c = user_data;
  if (stage != HPROF_SHRINK_STAGE_WRITE || c->requested) return;
  char name[256];
  if (dir_entries(c->dir, name, sizeof name) == 1 && has_suffix(name, ".hprof-shrink-tmp"))
    snprintf(c->tmp_seen, sizeof c->tmp_seen, "%s", name);
  c->at_done = done;
  c->at_total = total;
  pthread_mutex_lock(&c->lock);
  c->requested = 1;
  pthread_cond_broadcast(&c->cond);
  while (!c->done) pthread_cond_wait(&c->cond, &c->lock);
  pthread_mutex_unlock(&c->lock);
}

static void cancel_part_way(const char *fixtures, const char *work) {
  char input[4096], dir[4096], zip[4096];
  join(input, sizeof input, fixtures, "hotspot-android.hprof");
  join(dir, sizeof dir, work, "cancel");
  join(zip, sizeof zip, dir, "hotspot.zip");
  printf("[3] shrink hotspot-android.hprof, cancelled from a second thread during the write\n");
  check(mkdir(dir, 0700) == 0, "empty directory for the output");

  hprof_shrink_options o;
  hprof_shrink_options_init(&o);
  o.input_path = input;
  o.zip_path = zip;
  struct canceller c;
  memset(&c, 0, sizeof c);
  pthread_mutex_init(&c.lock, NULL);
  pthread_cond_init(&c.cond, NULL);
  c.job = hprof_shrink_job_new();
  c.dir = dir;
  pthread_t thread;
  check(pthread_create(&thread, NULL, cancel_thread, &c) == 0, "canceller thread started");

  hprof_shrink_status s = hprof_shrink_job_run(c.job, &o, cancel_on_write, &c);
  pthread_join(thread, NULL);
  check(c.requested && c.done, "cancel requested at write %" PRIu64 "/%" PRIu64
        " bytes and made by the other thread", c.at_done, c.at_total);
  check(c.tmp_seen[0] != 0, "while writing, the output was the temporary file %s", c.tmp_seen);
  const char *msg = hprof_shrink_job_error_message(c.job);
  check(s == HPROF_SHRINK_ERR_CANCELLED, "status %s: \"%s\"", hprof_shrink_status_name(s),
        or_null(msg));
  check(hprof_shrink_job_report_json(c.job) == NULL, "no report");
  check(!exists(zip), "no hotspot.zip");
  char left[256];
  int n = dir_entries(dir, left, sizeof left);
  check(n == 0, "no file left in the output directory (%d entries%s%s)", n, n ? ", e.g. " : "",
        n ? left : "");

  s = hprof_shrink_job_run(c.job, &o, NULL, NULL);
  check(s == HPROF_SHRINK_ERR_CANCELLED && dir_entries(dir, NULL, 0) == 0,
        "the cancelled job stays cancelled: a new run returns %s and writes nothing",
        hprof_shrink_status_name(s));
  hprof_shrink_job_free(c.job);
  pthread_mutex_destroy(&c.lock);
  pthread_cond_destroy(&c.cond);
  rmdir(dir);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s FIXTURES_DIR WORK_DIR\n", argv[0]);
    return 2;
  }
  printf("hprof-shrink C ABI test: library %s, sizeof(hprof_shrink_options) = %zu\n",
         hprof_shrink_version(), sizeof(hprof_shrink_options));
  bad_calls(argv[2]);
  shrink_and_check(argv[1], argv[2]);
  cancel_part_way(argv[1], argv[2]);
  printf("passed: %d checks\n", checks);
  return 0;
}
