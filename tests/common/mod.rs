//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod emulation;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh, empty scratch directory for one test.
pub fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sim_test_{}_{}", test, std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The numbers of a reference data file (Fortran `d` exponents read as `e`; `#` lines skipped).
pub fn numbers(path: &str) -> Vec<f64> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| l.split_ascii_whitespace())
        .map(|t| t.replace(['d', 'D'], "e").parse::<f64>().unwrap())
        .collect()
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Run the `sim` binary with `args` in `dir`.
pub fn sim(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sim")).current_dir(dir).args(args).output().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Assert a successful run, showing its output otherwise.
pub fn ok(o: Output) -> Output {
    assert!(o.status.success(), "sim failed: {}\n{}", stderr(&o), String::from_utf8_lossy(&o.stdout));
    o
}

/// Assert a refusal: exit code 2 and every needle in the message.
pub fn exit2(o: &Output, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    for n in needles {
        assert!(err.contains(n), "expected {n:?} in: {err}");
    }
}

/// Small heat case text; `solver` is e.g. "heat2d: {n: 33, r: 0.2}".
pub fn heat_case(name: &str, solver: &str, precision: &str, time: &str, extra: &str) -> String {
    format!(
        "name: {name}\nsolver:\n  {solver}\nprecision: {precision}\ntime: {time}\n{extra}\n"
    )
}

/// Every file in `dir` with its contents.
pub fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

/// Damage to a checkpoint's global heap (where HDF5 keeps the attribute strings) that HDF5
/// 1.10 does not survive.
#[derive(Clone, Copy)]
pub enum HeapDamage {
    /// An object's size made huge: the library crashes (SIGSEGV).
    Crash,
    /// An object's size made slightly off: the library loops endlessly.
    Loop,
}

/// The bytes of a checkpoint with the third object of its global heap damaged (the first two
/// hold the case text).
pub fn damaged_heap(bytes: &[u8], damage: HeapDamage) -> Vec<u8> {
    let heap = bytes.windows(4).position(|w| w == b"GCOL").expect("a global heap in the checkpoint");
    // Objects after the 16-byte collection header: index (2), references (2), reserved (4),
    // size (8), data padded to 8 bytes.
    let mut object = heap + 16;
    for _ in 0..2 {
        let size = u64::from_le_bytes(bytes[object + 8..object + 16].try_into().unwrap()) as usize;
        object += 16 + size.div_ceil(8) * 8;
    }
    let mut damaged = bytes.to_vec();
    match damage {
        HeapDamage::Crash => damaged[object + 15] = 0x7f,
        HeapDamage::Loop => damaged[object + 8] = 0xff,
    }
    damaged
}

/// Deterministic values in [-0.5, 0.5).
pub fn noise<T: sim::real::Real>(n: usize, seed: u64) -> Vec<T> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            T::of((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5)
        })
        .collect()
}

/// `sim run ... --quiet` in the background, killed if the test ends before it does.
pub struct Background(Option<std::process::Child>);

impl Background {
    /// `sim run ARGS --quiet` in `dir`, once `ready` holds (or after 30 s).
    pub fn start(dir: &Path, args: &[&str], ready: impl Fn(&Path) -> bool) -> Background {
        let child = Command::new(env!("CARGO_BIN_EXE_sim"))
            .current_dir(dir)
            .arg("run")
            .args(args)
            .arg("--quiet")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let run = Background(Some(child));
        let t0 = std::time::Instant::now();
        while !ready(dir) && t0.elapsed() < std::time::Duration::from_secs(30) {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        run
    }

    pub fn id(&self) -> u32 {
        self.0.as_ref().unwrap().id()
    }

    /// Send `signal` (`-INT`, `-TERM`, ...) and wait for the exit.
    pub fn signal(mut self, signal: &str) -> Output {
        let sent = Command::new("kill").args([signal, &self.id().to_string()]).status().unwrap();
        assert!(sent.success());
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Whether python3 imports `modules` (the tests' independent readers); CI must have them
/// (scripts/requirements-test.txt), elsewhere the caller skips with a note.
pub fn python_has(modules: &str) -> bool {
    let found = Command::new("python3").args(["-c", &format!("import {modules}")]).output().is_ok_and(|o| o.status.success());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "CI lacks {modules}: pip install -r scripts/requirements-test.txt");
        eprintln!("note: python3 cannot import {modules}; test skipped");
    }
    found
}
