//! Compiles `csrc/shim.c` with the installed MPI's own flags and links the
//! MPI library.
//!
//! The flags come from the MPI compiler wrapper (`$MPICC`, default `mpicc`):
//! Open MPI's `--showme:compile` / `--showme:link`, or MPICH's
//! `-compile_info` / `-link_info`. The link flags are also handed to the
//! crate as `SNET_MPI_LINK_ARGS`, so that `snet build` can link executables
//! against the same library.

use std::process::Command;

fn wrapper_output(mpicc: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(mpicc).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-changed=csrc/shim.c");
    println!("cargo:rerun-if-env-changed=MPICC");
    let mpicc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
    let (compile, link) = match (
        wrapper_output(&mpicc, &["--showme:compile"]),
        wrapper_output(&mpicc, &["--showme:link"]),
    ) {
        (Some(c), Some(l)) => (c, l),
        _ => match wrapper_output(&mpicc, &["-show"]) {
            // MPICH: "cc <compile and link flags>"; the first word is the compiler.
            Some(all) => {
                let rest = all.split_once(' ').map_or("", |x| x.1).to_string();
                (rest.clone(), rest)
            }
            None => panic!(
                "\n\nsnet-mpi: cannot run the MPI compiler wrapper `{mpicc}`.\n\
                 Install an MPI library (scripts/setup.sh installs Open MPI: \
                 Debian packages openmpi-bin and libopenmpi-dev), or set MPICC \
                 to your MPI's wrapper.\n\n"
            ),
        },
    };
    let mut build = cc::Build::new();
    build.file("csrc/shim.c").warnings(true);
    for flag in compile.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-I") {
            build.include(dir);
        } else if flag.starts_with("-D") || flag.starts_with("-pthread") {
            build.flag(flag);
        }
    }
    build.compile("snet_mpi_shim");
    let mut link_args = Vec::new();
    for flag in link.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
            link_args.push(flag.to_string());
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={lib}");
            link_args.push(flag.to_string());
        } else if flag.starts_with("-Wl,") {
            // Only `snet build` passes these (a library's build script
            // cannot hand link arguments to the binaries that use it).
            link_args.push(flag.to_string());
        }
    }
    println!("cargo:rustc-env=SNET_MPI_LINK_ARGS={}", link_args.join(" "));
}
