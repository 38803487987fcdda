//! The conformance corpus: `tests/conformance/<suite>/<case>/`.
//!
//! Each case holds `prog.snet`, `input.xml`, and either `expected.xml`
//! (compared as a multiset of records, or as a sequence when an `ordered`
//! file is present; field values compared as the exact text written, so
//! C4SNet values must be in the canonical `printf` form) or `expected-error.txt` (substrings, one
//! per non-empty line, that the error message must contain, compared in
//! lower case; the run must exit nonzero; with a file `no-records` beside
//! it, the run must also write no data record). Every case runs under 1, 2 and
//! 8 workers on one node, and as a distributed run on the loopback
//! transport: 4 nodes with the program's own placements, and 2 nodes (2
//! workers each) and 4 nodes (1 and 2 workers) with random components of
//! the program placed on random nodes (`--scatter SEED`, the seed fixed per
//! case and shown in the trial's name), once with every field sent by
//! reference (`--inline-fields 0`):
//! placement must change no output, order included where it is
//! deterministic. The placement suite's cases run once more with their
//! own placements on 4 loopback nodes under `--on-node-loss respawn`
//! (nothing lost), where a placement inside another runs pushed down. A `nodes` file restricts the node counts of the
//! distributed runs (e.g. `2` for a case about a missing node, `4` for a
//! case that places on node 3); one-node runs always happen, since one node
//! runs every placement (on node 0, as if the program had none). There a
//! case's `expected-1node.xml`, if present, replaces `expected-error.txt`
//! (a placement on a node that does not exist is an error only with two or
//! more nodes), and `warning-1node.txt` holds a substring that the one-node
//! run's standard error must contain exactly once (one warning per run,
//! not per record) and that distributed runs must not print.
//! `SNET_SEEDS=N` adds N-1 more random placements per case (the property
//! test over more seeds; their trials' names end in `seed1` ... `seedN-1`,
//! so the filter `seed` selects only them). `SNET_REPEAT=N` repeats each run N times (flake hunting);
//! `SNET_CASES=substring` selects cases (`a,b,c`: those whose name
//! contains any of the substrings).
//!
//! Where `mpirun` is installed (and `SNET_MPI` is not `0`), every case also
//! runs under `mpirun`, one process per node (`SNET_MPI=only`: only these;
//! they wait on MPI's start-up more than they compute, so run them with
//! more test threads than cores, as the test script does): `-np 1`, `-np 2` and `-np 4`
//! with random placements (4: fields by reference), and `-np 2` over TCP
//! (`--mca btl self,tcp`). The harness adds the flags CI needs (running as
//! root, more ranks than cores).
//!
//! Every case also runs over the shared-memory transport (unless
//! `SNET_SHM` is `0`; `SNET_SHM=only`: only these), one process per node,
//! with the notify modes (`poll`, `interrupt`, `sparse`) and field modes
//! (`chunked`, `single-copy`, `zero-copy`): 1 node in each field mode (no
//! rings there, so the notify mode is unused); 2 nodes with random
//! placements in every notify × fields combination; 4 nodes with random
//! placements, every field by reference, and tiny rings (8 slots of 192
//! bytes, so most messages are chunked or go through the arena and senders
//! often wait for room) in three combinations that cover every notify mode
//! and every field mode, chosen per case (from its placement seed) so that
//! the corpus as a whole runs all nine at 4 nodes.
//!
//! An optional `args` file holds extra command-line arguments for the run,
//! one argument per line (so a line may contain spaces, as in
//! `--input-limit` / `8 + 2*output`; surrounding whitespace and empty lines
//! are ignored), appended after `-i <input> -w <workers>`.
//!
//! A case with C or C++ box code (`*.c`, `*.cpp`, `*.cc`, `*.cxx` files in
//! its directory, or any case of the `c` suite: its boxes may all be inline
//! C) is built once with `snet build prog.snet <those files> -o <exe>`, and the produced executable is
//! run with the same arguments instead of `snet run`. The executable is kept
//! for later test processes (`target/tmp/conformance-builds/`, named by a hash
//! of the case's files and of the `snet` that built it): the test script runs
//! this harness five times. A compiler upgraded in place is not in the hash:
//! remove that directory to rebuild every case. Such a case may hold
//! `expected-build-error.txt` instead: the build must fail with a message
//! containing each of its non-empty lines.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use libtest_mimic::{Arguments, Failed, Trial};

mod common;

use common::{have_mpirun, mpirun};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repo root")
}

/// Field values as written (not decoded, but checked by the C4SNet text
/// codec): the output must hold the exact text of `expected.xml`, i.e. the
/// canonical `printf` form (records.md).
fn read_items(bytes: &[u8], what: &str) -> Result<Vec<snet_io::StreamItem>, Failed> {
    snet_io::read_all_verbatim(bytes, &c4snet::text_codecs())
        .map_err(|e| Failed::from(format!("cannot read {what}: {e}")))
}

/// The C and C++ sources of a case (sorted), empty for a pure case.
fn c_sources(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.extension()
                        .is_some_and(|x| x == "c" || x == "cpp" || x == "cc" || x == "cxx")
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

type BuildResult = Result<PathBuf, String>;

/// Builds a C case once (all worker counts share the executable): Ok(exe) or Err(stderr).
/// A successful build is kept across test processes (see [`build_key`]):
/// the test script runs this harness five times (the corpus, MPI, shared
/// memory, the placement property, the flake hunt), and each of those
/// would otherwise build every C case again with the same `snet`.
fn built(dir: &Path) -> BuildResult {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Arc<OnceLock<BuildResult>>>>> = OnceLock::new();
    let cell = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(dir.to_path_buf())
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let name = format!(
            "{}-{}",
            dir.parent()
                .and_then(|p| p.file_name())
                .unwrap_or_default()
                .to_string_lossy(),
            dir.file_name().unwrap_or_default().to_string_lossy()
        );
        let out_dir = exe_dir()?;
        let exe = out_dir.join(format!("{name}.{:016x}", build_key(dir)?));
        if exe.exists() {
            return Ok(exe);
        }
        // Built under a name of this process's own, then renamed: a test
        // process running at the same time sees the whole executable or
        // none.
        let partial = out_dir.join(format!("{name}.partial.{}", std::process::id()));
        let out = Command::new(env!("CARGO_BIN_EXE_snet"))
            .arg("build")
            .arg(dir.join("prog.snet"))
            .args(c_sources(dir))
            .arg("-o")
            .arg(&partial)
            .output()
            .map_err(|e| format!("cannot start snet build: {e}"))?;
        if out.status.success() {
            std::fs::rename(&partial, &exe).map_err(|e| format!("{}: {e}", exe.display()))?;
            // The same case built from other sources or by another `snet`
            // is stale now.
            if let Ok(entries) = std::fs::read_dir(&out_dir) {
                for e in entries.flatten() {
                    let file = e.file_name().to_string_lossy().into_owned();
                    if e.path() != exe && file.rsplit_once('.').is_some_and(|(n, _)| n == name) {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            }
            Ok(exe)
        } else {
            let _ = std::fs::remove_file(&partial);
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    })
    .clone()
}

/// What a C case's executable is built from (FNV-1a, 64 bits): the `snet`
/// that builds it (path, size, modification time; the runner library it
/// links is the one built with it), the compilers and runner library the
/// environment names, and the name and content of every file in the case's
/// directory (sources, headers, the program). Any change builds anew.
fn build_key(dir: &Path) -> Result<u64, String> {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut eat = |bytes: &[u8]| {
        for b in bytes.iter().chain([0xffu8].iter()) {
            h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    };
    let snet = Path::new(env!("CARGO_BIN_EXE_snet"));
    let meta = std::fs::metadata(snet).map_err(|e| format!("{}: {e}", snet.display()))?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .unwrap_or_default();
    eat(snet.as_os_str().as_encoded_bytes());
    eat(&meta.len().to_le_bytes());
    eat(&modified.as_nanos().to_le_bytes());
    for var in ["CC", "CXX", "SNET_RUNNER_LIB"] {
        eat(std::env::var_os(var).unwrap_or_default().as_encoded_bytes());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    for f in files {
        eat(f.file_name().unwrap_or_default().as_encoded_bytes());
        eat(&std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?);
    }
    Ok(h)
}

/// Where the test processes keep the executables they build (~20 MB each):
/// one directory under the target directory's scratch space, made once,
/// shared by every test process (an executable's name holds its case and
/// [`build_key`]).
fn exe_dir() -> Result<PathBuf, String> {
    static DIR: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance-builds");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(dir)
    })
    .clone()
}

/// How a case is run: workers per node, and for distributed runs the
/// loopback node count and the placement seed (`--scatter`: random
/// components placed on random nodes; fields by reference when `by_ref`).
#[derive(Copy, Clone)]
struct Setup {
    workers: usize,
    nodes: u32,
    scatter: Option<u64>,
    by_ref: bool,
    /// Started by `mpirun -np nodes` (one process per node) instead of the
    /// loopback transport; `Some(true)`: with `--mca btl self,tcp` (the
    /// network path of a cluster).
    mpi: Option<bool>,
    /// `--transport shm` with this notify and field mode; tiny rings (8
    /// slots of 192 bytes: most messages chunked or through the arena,
    /// senders often facing a full ring) when `.2`.
    shm: Option<(&'static str, &'static str, bool)>,
    /// `--on-node-loss respawn` (nothing lost): nested placements run
    /// pushed down (`Graph::placed_for_replay`), which must change no
    /// output either.
    respawn: bool,
}

impl Setup {
    fn args(&self) -> Vec<String> {
        let mut v = vec!["-w".to_string(), self.workers.to_string()];
        if let Some((notify, fields, _)) = self.shm {
            v.extend([
                "--nodes".into(),
                self.nodes.to_string(),
                "--transport".into(),
                "shm".into(),
                "--notify".into(),
                notify.into(),
                "--fields".into(),
                fields.into(),
            ]);
        } else if self.nodes > 1 && self.mpi.is_none() {
            v.extend([
                "--nodes".into(),
                self.nodes.to_string(),
                "--transport".into(),
                "loopback".into(),
            ]);
        }
        if let Some(s) = self.scatter {
            v.extend(["--scatter".into(), s.to_string()]);
        }
        if self.by_ref {
            v.extend(["--inline-fields".into(), "0".into()]);
        }
        if self.respawn {
            v.extend(["--on-node-loss".into(), "respawn".into()]);
        }
        v
    }

    fn name(&self) -> String {
        let mut n = format!("w{}", self.workers);
        if let Some((notify, fields, tiny)) = self.shm {
            n = format!("shm-n{}-{notify}-{fields} {n}", self.nodes);
            if tiny {
                n.push_str(" tiny-rings");
            }
        }
        match self.mpi {
            None if self.nodes > 1 => n.push_str(&format!(" n{}", self.nodes)),
            None => {}
            Some(false) => n = format!("mpi-np{} {n}", self.nodes),
            Some(true) => n = format!("mpi-np{}-tcp {n}", self.nodes),
        }
        if let Some(s) = self.scatter {
            n.push_str(&format!(" scatter{s}"));
        }
        if self.by_ref {
            n.push_str(" byref");
        }
        if self.respawn {
            n.push_str(" respawn");
        }
        n
    }
}

/// The node counts a case may run with: its `nodes` file (a list such as
/// `2 4`), or any.
fn allowed_nodes(dir: &Path) -> Option<Vec<u32>> {
    std::fs::read_to_string(dir.join("nodes")).ok().map(|s| {
        s.split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect()
    })
}

fn check_case(dir: &Path, setup: Setup, repeat: usize) -> Result<(), Failed> {
    let prog = dir.join("prog.snet");
    let c_case = !c_sources(dir).is_empty()
        || dir
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|n| n == "c");
    if let Ok(want) = std::fs::read_to_string(dir.join("expected-build-error.txt")) {
        // Every non-empty line is a substring the message must contain.
        let wants: Vec<String> = want
            .lines()
            .map(|l| l.trim().to_lowercase())
            .filter(|l| !l.is_empty())
            .collect();
        return match built(dir) {
            Ok(_) => {
                Err(format!("expected the build to fail with {wants:?}, but it succeeded").into())
            }
            Err(e) => match wants
                .iter()
                .find(|w| !e.to_lowercase().contains(w.as_str()))
            {
                None => Ok(()),
                Some(want) => Err(format!("build error lacks {want:?}:\n{e}").into()),
            },
        };
    }
    let exe = if c_case {
        Some(built(dir).map_err(|e| format!("snet build failed:\n{e}"))?)
    } else {
        None
    };
    let input = dir.join("input.xml");
    let one_node = setup.nodes == 1;
    let expected_1node = std::fs::read(dir.join("expected-1node.xml"))
        .ok()
        .filter(|_| one_node);
    let expected_err = std::fs::read_to_string(dir.join("expected-error.txt"))
        .ok()
        .filter(|_| expected_1node.is_none());
    let expected = expected_1node.or_else(|| std::fs::read(dir.join("expected.xml")).ok());
    let warning = std::fs::read_to_string(dir.join("warning-1node.txt"))
        .ok()
        .map(|w| w.trim().to_string());
    let ordered = dir.join("ordered").exists();
    let no_records = dir.join("no-records").exists();
    // One argument per line (see the module docs).
    let extra_args: Vec<String> = std::fs::read_to_string(dir.join("args"))
        .map(|s| {
            s.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    for _ in 0..repeat {
        let snet = Path::new(env!("CARGO_BIN_EXE_snet"));
        let program = exe.as_deref().unwrap_or(snet);
        let mut cmd = match setup.mpi {
            Some(tcp) => {
                let mut c = mpirun(setup.nodes, tcp);
                c.arg(program);
                c
            }
            None => Command::new(program),
        };
        if let Some((_, _, true)) = setup.shm {
            cmd.env("SNET_SHM_SLOTS", "8")
                .env("SNET_SHM_SLOT_BYTES", "192");
        }
        if exe.is_none() {
            cmd.arg("run").arg(&prog);
        }
        let out = cmd
            .arg("-i")
            .arg(&input)
            .args(setup.args())
            .args(&extra_args)
            .output()
            .map_err(|e| format!("cannot start snet: {e}"))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if let Some(want) = &expected_err {
            // Every non-empty line is a substring the message must contain.
            let wants: Vec<String> = want
                .lines()
                .map(|l| l.trim().to_lowercase())
                .filter(|l| !l.is_empty())
                .collect();
            if out.status.success() {
                return Err(format!(
                    "expected an error containing {wants:?}, but the run succeeded"
                )
                .into());
            }
            let lower = stderr.to_lowercase();
            if let Some(want) = wants.iter().find(|w| !lower.contains(w.as_str())) {
                return Err(format!("error message lacks {want:?}:\n{stderr}").into());
            }
            if stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE") {
                return Err(format!("the error is a panic:\n{stderr}").into());
            }
            let stdout = String::from_utf8_lossy(&out.stdout);
            if no_records && stdout.contains("type=\"data\"") {
                return Err(format!("the failed run wrote data records:\n{stdout}").into());
            }
            continue;
        }
        if !out.status.success() {
            return Err(format!("run failed ({}):\n{stderr}", out.status).into());
        }
        if let Some(w) = &warning {
            let times = stderr.matches(w.as_str()).count();
            match (one_node, times) {
                (true, 1) | (false, 0) => {}
                (true, n) => {
                    return Err(format!(
                        "the one-node warning {w:?} should appear once, not {n} times:\n{stderr}"
                    )
                    .into())
                }
                (false, _) => {
                    return Err(format!(
                        "a distributed run printed the one-node warning:\n{stderr}"
                    )
                    .into())
                }
            }
        }
        let got = read_items(&out.stdout, "output")?;
        if !matches!(got.last(), Some(snet_io::StreamItem::Terminate)) {
            return Err("output does not end with the terminate record".into());
        }
        let want = read_items(
            expected
                .as_deref()
                .ok_or("case has neither expected.xml nor expected-error.txt")?,
            "expected.xml",
        )?;
        if ordered {
            let canon = |items: &[snet_io::StreamItem]| -> Vec<String> {
                items
                    .iter()
                    .filter_map(|i| match i {
                        snet_io::StreamItem::Data(r) => {
                            Some(snet_io::canonical(r, &c4snet::text_codecs()))
                        }
                        snet_io::StreamItem::Terminate => None,
                    })
                    .collect()
            };
            let (g, w) = (canon(&got), canon(&want));
            if g != w {
                let first = g
                    .iter()
                    .zip(&w)
                    .position(|(a, b)| a != b)
                    .unwrap_or(g.len().min(w.len()));
                return Err(format!(
                    "order differs (got {} records, want {}); first difference at record {first}: got {:?}, want {:?}",
                    g.len(),
                    w.len(),
                    g.get(first),
                    w.get(first)
                )
                .into());
            }
        } else {
            snet_io::equivalent_multiset(&got, &want, &c4snet::text_codecs())
                .map_err(Failed::from)?;
        }
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let root = repo_root().join("tests/conformance");
    let repeat: usize = std::env::var("SNET_REPEAT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let select = std::env::var("SNET_CASES").ok();
    let seeds: u64 = std::env::var("SNET_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    // MPI setups: where mpirun exists, unless SNET_MPI=0; SNET_MPI=only
    // runs nothing else.
    let mpi_env = std::env::var("SNET_MPI").unwrap_or_default();
    let mpi = mpi_env != "0" && have_mpirun();
    let only_mpi = mpi_env == "only";
    if only_mpi && !mpi {
        eprintln!(
            "SNET_MPI=only, but mpirun is not installed (scripts/setup.sh installs Open MPI)"
        );
        std::process::exit(2);
    }
    // Shared-memory setups unless SNET_SHM=0; SNET_SHM=only runs nothing else.
    let shm_env = std::env::var("SNET_SHM").unwrap_or_default();
    let shm = shm_env != "0";
    let only_shm = shm_env == "only";
    let mut trials = Vec::new();
    let mut suites: Vec<PathBuf> = std::fs::read_dir(&root)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    suites.sort();
    for suite in suites {
        let mut cases: Vec<PathBuf> = std::fs::read_dir(&suite)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.join("prog.snet").exists())
                    .collect()
            })
            .unwrap_or_default();
        cases.sort();
        for case in cases {
            let name = format!(
                "{}/{}",
                suite.file_name().unwrap().to_string_lossy(),
                case.file_name().unwrap().to_string_lossy()
            );
            if select
                .as_ref()
                .is_some_and(|s| !s.split(',').any(|alt| name.contains(alt)))
            {
                continue;
            }
            // The seed of the random placements: fixed per case, so a
            // failure reproduces (`snet run ... --scatter SEED`).
            let seed = name.bytes().fold(1469598103934665603u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(1099511628211)
            }) % 1000;
            let mut setups = vec![
                Setup {
                    workers: 1,
                    nodes: 1,
                    scatter: None,
                    by_ref: false,
                    mpi: None,
                    shm: None,
                    respawn: false,
                },
                Setup {
                    workers: 2,
                    nodes: 1,
                    scatter: None,
                    by_ref: false,
                    mpi: None,
                    shm: None,
                    respawn: false,
                },
                Setup {
                    workers: 8,
                    nodes: 1,
                    scatter: None,
                    by_ref: false,
                    mpi: None,
                    shm: None,
                    respawn: false,
                },
                Setup {
                    workers: 2,
                    nodes: 2,
                    scatter: Some(seed),
                    by_ref: false,
                    mpi: None,
                    shm: None,
                    respawn: false,
                },
                Setup {
                    workers: 1,
                    nodes: 4,
                    scatter: Some(seed + 1),
                    by_ref: true,
                    mpi: None,
                    shm: None,
                    respawn: false,
                },
                Setup {
                    workers: 2,
                    nodes: 4,
                    scatter: Some(seed + 2),
                    by_ref: false,
                    mpi: None,
                    shm: None,
                    respawn: false,
                },
                // The program's own placements, unchanged.
                Setup {
                    workers: 2,
                    nodes: 4,
                    scatter: None,
                    by_ref: false,
                    mpi: None,
                    shm: None,
                    respawn: false,
                },
            ];
            // The placement suite's own placements under `--on-node-loss
            // respawn` (nothing lost), where a placement inside another
            // on a node other than 0 is pushed down: the same output.
            if name.starts_with("placement/") {
                setups.push(Setup {
                    workers: 2,
                    nodes: 4,
                    scatter: None,
                    by_ref: false,
                    mpi: None,
                    shm: None,
                    respawn: true,
                });
            }
            // More random placements on request (`SNET_SEEDS=N`): the
            // property "placement changes no output" over N seeds per case.
            // Their trials' names end in `seedK` (the test script's property
            // step selects them, and only them, with that word).
            let mut more_seeds = Vec::new();
            for k in 1..seeds {
                more_seeds.push(Setup {
                    workers: 1 + (k as usize % 2),
                    nodes: if k % 3 == 0 { 2 } else { 4 },
                    scatter: Some(seed + 1000 * k),
                    by_ref: k % 2 == 0,
                    mpi: None,
                    shm: None,
                    respawn: false,
                });
            }
            // The same under mpirun (one process per node): 1 node, 2 and 4
            // nodes with random placements (4: every field by reference),
            // and 2 nodes over TCP.
            if mpi {
                let m = |nodes, workers, scatter, by_ref, tcp| Setup {
                    workers,
                    nodes,
                    scatter,
                    by_ref,
                    mpi: Some(tcp),
                    shm: None,
                    respawn: false,
                };
                setups.extend([
                    m(1, 2, None, false, false),
                    m(2, 2, Some(seed + 3), false, false),
                    m(4, 1, Some(seed + 4), true, false),
                    m(2, 1, Some(seed + 5), true, true),
                ]);
            }
            // The same over shared memory, one process per node. 2 nodes
            // with random placements: every notify × fields combination.
            // 1 node: once per field mode (one node has no rings, so the
            // notify mode is unused; zero-copy still allocates fields in the
            // arena). 4 nodes with random placements, every field by
            // reference and tiny rings (the costliest runs: 4 processes, most
            // messages chunked, senders waiting for room): three
            // combinations that use every notify mode and every field mode
            // once (a Latin square), shifted per case by its seed, so that
            // across the corpus every combination runs at 4 nodes too.
            if shm {
                const NOTIFY: [&str; 3] = ["poll", "interrupt", "sparse"];
                const FIELDS: [&str; 3] = ["chunked", "single-copy", "zero-copy"];
                let s = |nodes, workers, scatter, by_ref, (notify, fields, tiny)| Setup {
                    workers,
                    nodes,
                    scatter,
                    by_ref,
                    mpi: None,
                    shm: Some((notify, fields, tiny)),
                    respawn: false,
                };
                let shift = seed as usize;
                for (i, fields) in FIELDS.into_iter().enumerate() {
                    setups.push(s(
                        1,
                        2,
                        None,
                        false,
                        (NOTIFY[(i + shift) % 3], fields, false),
                    ));
                }
                for notify in NOTIFY {
                    for fields in FIELDS {
                        setups.push(s(2, 2, Some(seed + 6), false, (notify, fields, false)));
                    }
                }
                for (i, notify) in NOTIFY.into_iter().enumerate() {
                    let fields = FIELDS[(i + shift / 3) % 3];
                    setups.push(s(4, 1, Some(seed + 7), true, (notify, fields, true)));
                }
            }
            let allowed = allowed_nodes(&case);
            let named = setups.into_iter().map(|s| (s, s.name())).chain(
                (1..)
                    .zip(more_seeds)
                    .map(|(k, s)| (s, format!("{} seed{k}", s.name()))),
            );
            for (setup, setup_name) in named
                .filter(|(s, _)| {
                    s.nodes == 1 || allowed.as_ref().is_none_or(|a| a.contains(&s.nodes))
                })
                .filter(|(s, _)| !only_mpi || s.mpi.is_some())
                .filter(|(s, _)| !only_shm || s.shm.is_some())
            {
                let case = case.clone();
                trials.push(Trial::test(format!("{name} {setup_name}"), move || {
                    check_case(&case, setup, repeat)
                }));
            }
        }
    }
    libtest_mimic::run(&args, trials).exit();
}
