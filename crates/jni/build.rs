//! Android builds without the NDK (scripts/android-jni.sh) name an unwinder archive for the
//! target in HPROF_SHRINK_ANDROID_UNWINDER (GCC's libgcc_eh.a): it is linked into the
//! library, so a panic can unwind to the JNI boundary and become an exception there, with
//! `android/gthr_active.c`, without which that archive's unwinder would run as if the
//! process had one thread (no locks). The stand-in sysroot of those builds has an
//! empty libunwind.a; a build with the NDK (cargo-ndk) links the NDK's libunwind and sets
//! nothing here.

fn main() {
    println!("cargo:rerun-if-env-changed=HPROF_SHRINK_ANDROID_UNWINDER");
    println!("cargo:rerun-if-changed=android/gthr_active.c");
    let android = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "android");
    let Ok(archive) = std::env::var("HPROF_SHRINK_ANDROID_UNWINDER") else {
        return;
    };
    if !android {
        return;
    }
    // As objects on the linker's command line: an archive member would not be pulled in for
    // the weak references that need it.
    for object in cc::Build::new()
        .file("android/gthr_active.c")
        .compile_intermediates()
    {
        println!("cargo:rustc-link-arg-cdylib={}", object.display());
    }
    // After the libraries on the command line, so it resolves what std needs.
    println!("cargo:rustc-link-arg-cdylib={archive}");
}
