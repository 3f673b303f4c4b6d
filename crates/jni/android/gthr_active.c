/* Linked into the Android library with GCC's unwinder (build.rs, HPROF_SHRINK_ANDROID_UNWINDER).
 *
 * libgcc_eh.a was built for glibc: it asks whether threads are in use by testing the address
 * of the weak symbol __pthread_key_create, which glibc exports and bionic does not. Without
 * this definition the unwinder would take the process for single-threaded and skip its
 * locks and its once-only initialisation (two threads panicking at once would race there),
 * and the archive's emulated thread locals (__emutls_get_address, linked only if code in the
 * library uses them; Rust's std here uses pthread keys) would be one copy for all threads.
 * Linked as an object (an archive member is not pulled in for weak references) and not
 * exported (the library's version script exports only the JNI entry points). */

extern int pthread_key_create(void *key, void (*destructor)(void *));

int __pthread_key_create(void *key, void (*destructor)(void *)) {
  return pthread_key_create(key, destructor);
}
