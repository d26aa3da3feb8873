//! Builds the QEMU TCG plugin (`qemu/hstrace.c`) into a shared object that the
//! library embeds (`source::qemu`). Without a working C compiler the embedded plugin
//! is empty and the fast trace source reports itself unavailable: the crate still
//! builds, and `signature profile` falls back to valgrind lackey.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=qemu/hstrace.c");
    println!("cargo:rerun-if-env-changed=CC");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let so = out.join("hstrace.so");
    let built = cc::Build::new()
        .try_get_compiler()
        .map_err(|e| e.to_string())
        .and_then(|c| {
            let status = c
                .to_command()
                .args(["-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-Wall"])
                .arg("-o")
                .arg(&so)
                .arg("qemu/hstrace.c")
                .arg("-lm")
                .status()
                .map_err(|e| e.to_string())?;
            if status.success() {
                Ok(())
            } else {
                Err(format!("the C compiler exited with {status}"))
            }
        });
    if let Err(e) = built {
        println!("cargo:warning=QEMU trace plugin not built ({e}); `signature profile` will use valgrind lackey");
        std::fs::write(&so, b"").expect("write to OUT_DIR");
    }
}
