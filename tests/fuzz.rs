//! Untrusted input. Crafted case files and input paths give an input error (exit code 2) that
//! names the file and quotes little of it, never a panic, an abort or a hang; and fuzz targets
//! over mutations of the shipped inputs:
//!
//! * case files: mutations of `cases/*.yaml` and generated YAML, parsed and validated in
//!   process; a sample also through `sim check`, which must exit 0 or 2 and write nothing;
//! * point clouds: mutations of small valid clouds in the four formats through
//!   `cloud_file::parse`, which must return the cloud or an input error;
//! * checkpoints: mutations of a small real checkpoint, restarted by `sim run --restart` in a
//!   scratch directory, which must end with exit code 0 or 2 (or 1 where the mutation put a
//!   non-finite value into a field) and change nothing outside that directory.
//!
//! Each target runs a fixed number of cases from a fixed seed. `SIM_FUZZ_CASES=N` sets the
//! cases per target, `SIM_FUZZ_SEED=S` other seeds (`scripts/fuzz.sh` runs both for long).

mod common;
use common::*;

use std::fmt::Debug;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

use sim::SimError;
use sim::case::Case;
use sim::mesh::cloud_file::{self, CloudFormat};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Longest stretch of one input an error message may quote (`sim::error::QUOTE_MAX`).
const QUOTE_MAX: usize = 200;

// ---------------------------------------------------------------------------------------------
// Settings and helpers

/// Cases per target: `SIM_FUZZ_CASES`, or `default`.
fn cases(default: u32) -> u32 {
    match std::env::var("SIM_FUZZ_CASES") {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| panic!("SIM_FUZZ_CASES={v:?} is not a number")),
        Err(_) => default,
    }
}

/// A runner for `target` with a fixed seed (`SIM_FUZZ_SEED` picks another); failures are
/// shrunk (in at most `shrink` steps) and reported, never written to files.
fn runner(target: &str, cases: u32, shrink: u32) -> TestRunner {
    let seed: u64 = std::env::var("SIM_FUZZ_SEED").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0);
    let mut h: u64 = 0xcbf29ce484222325 ^ seed;
    let mut bytes = [0u8; 32];
    for (k, chunk) in bytes.chunks_mut(8).enumerate() {
        for b in target.bytes().chain([k as u8]) {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
        chunk.copy_from_slice(&h.to_le_bytes());
    }
    let config = Config { cases, failure_persistence: None, max_shrink_iters: shrink, ..Config::default() };
    eprintln!("fuzz target {target}: {cases} cases, SIM_FUZZ_SEED={seed}");
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

fn finish<T: Debug>(target: &str, r: Result<(), proptest::test_runner::TestError<T>>) {
    if let Err(e) = r {
        panic!("fuzz target {target} failed: {e}");
    }
}

fn fail(msg: String) -> Result<(), TestCaseError> {
    Err(TestCaseError::fail(msg))
}

/// Position `i` of `s` moved forward to a character boundary.
fn boundary(s: &str, i: Index) -> usize {
    let mut p = i.index(s.len() + 1);
    while !s.is_char_boundary(p) {
        p += 1;
    }
    p
}

/// The most characters of one line of `m` that are `filler`.
fn filler_per_line(m: &str, filler: char) -> usize {
    m.lines().map(|l| l.chars().filter(|&c| c == filler).count()).max().unwrap_or(0)
}

/// Outcome of a `sim` run under a time limit.
struct Run {
    /// None: killed by a signal, or by us at the time limit.
    code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    stderr: String,
}

/// Run `sim args` in `dir`, killed after `limit`.
fn sim_limited(dir: &Path, args: &[&str], limit: Duration) -> Run {
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_sim"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let t0 = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > limit {
            timed_out = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run { code: status.code(), signal: status.signal(), timed_out, stderr: reader.join().unwrap() }
}

impl Run {
    /// "exit code 2", "killed by signal 11", ...
    fn describe(&self) -> String {
        match (self.timed_out, self.code, self.signal) {
            (true, ..) => "still running at the time limit (killed)".into(),
            (_, Some(c), _) => format!("exit code {c}"),
            (_, None, Some(s)) => format!("killed by signal {s}"),
            _ => "no exit status".into(),
        }
    }
}

/// Every path under `dir` (symbolic links not followed) with its contents, for comparisons.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let t = std::fs::symlink_metadata(&p).unwrap().file_type();
            if t.is_dir() {
                stack.push(p.clone());
                out.push((p, Vec::new()));
            } else if t.is_file() {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, bytes));
            } else {
                out.push((p, b"(link)".to_vec()));
            }
        }
    }
    out.sort();
    out
}

// ---------------------------------------------------------------------------------------------
// Findings: each of these failed before input files were checked and messages shortened

#[test]
fn case_file_with_invalid_utf8_names_the_byte_line_and_column() {
    let dir = scratch("fuzz_utf8");
    let mut bytes = b"name: h\nsolver:\n  heat2d: {n: 17, r: 0.2}\ntime: {end_step: 2}\ndescription: caf".to_vec();
    let at = bytes.len();
    bytes.extend([0xC3, 0x28, b'\n']);
    let path = dir.join("bad.yaml");
    std::fs::write(&path, &bytes).unwrap();
    let needles = [format!("byte {at}"), "line 5".into(), "column 17".into(), "bad.yaml".into()];
    match Case::load(&path) {
        Err(SimError::Input(m)) => {
            for n in &needles {
                assert!(m.contains(n.as_str()), "lacks {n:?}: {m}");
            }
        }
        other => panic!("expected an input error, got {other:?}"),
    }
    let r = sim_limited(&dir, &["check", "bad.yaml"], Duration::from_secs(60));
    assert_eq!(r.code, Some(2), "{}: {}", r.describe(), r.stderr);
    assert!(r.stderr.contains(&needles[0]), "{}", r.stderr);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Case texts with a 1 MB value in the places where a message quotes it.
fn long_line_cases() -> Vec<(&'static str, String)> {
    let z = "Z".repeat(1_000_000);
    let solver = "solver:\n  heat2d: {n: 17, r: 0.2}\n";
    let time = "time: {end_step: 2}\n";
    vec![
        ("unknown precision", format!("name: h\n{solver}{time}precision: {z}\n")),
        ("unknown solver", format!("name: h\nsolver:\n  {z}: {{n: 17}}\n{time}")),
        ("unknown key", format!("name: h\n{solver}{time}{z}: 1\n")),
        ("unknown nested key", format!("name: h\n{solver}time: {{end_step: 2, {z}: 1}}\n")),
        ("wrong type", format!("name: h\nsolver:\n  heat2d: {{n: {z}, r: 0.2}}\n{time}")),
        ("quoted string for a number", format!("name: h\nsolver:\n  heat2d: {{n: \"{z}\", r: 0.2}}\n{time}")),
        ("bad name", format!("name: a/{z}\n{solver}{time}")),
        ("unclosed flow", format!("name: h\n{solver}time: {{end_step: 2, description: [{z}\n")),
    ]
}

#[test]
fn long_case_lines_are_quoted_in_at_most_200_characters() {
    for (what, text) in long_line_cases() {
        let m = match Case::parse(&text, "long.yaml") {
            Err(SimError::Input(m)) => m,
            other => panic!("{what}: expected an input error, got {:?}", other.map(|c| c.name.len())),
        };
        // at most QUOTE_MAX characters a quotation; a line may name an unknown key twice (key
        // path and message)
        let shown = filler_per_line(&m, 'Z');
        assert!(m.starts_with("case file long.yaml"), "{what}: {m}");
        assert!(shown <= 2 * QUOTE_MAX, "{what}: {shown} characters of the value on one line:\n{}", &m[..m.len().min(3000)]);
        assert!(m.len() < 3000, "{what}: message of {} bytes:\n{}", m.len(), &m[..3000]);
    }
    // the same through the binary
    let dir = scratch("fuzz_long");
    std::fs::write(dir.join("long.yaml"), &long_line_cases()[0].1).unwrap();
    let r = sim_limited(&dir, &["check", "long.yaml"], Duration::from_secs(60));
    assert_eq!(r.code, Some(2), "{}", r.describe());
    assert!(r.stderr.len() < 3000 && r.stderr.contains("precision"), "{} bytes:\n{}", r.stderr.len(), &r.stderr[..r.stderr.len().min(3000)]);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn special_files_are_refused_as_case_files_and_clouds() {
    let dir = scratch("fuzz_special");
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    std::fs::create_dir(dir.join("folder")).unwrap();
    let paths = [
        ("/dev/zero".to_string(), "character device"),
        ("/dev/urandom".to_string(), "character device"),
        (fifo.to_str().unwrap().to_string(), "FIFO"),
        ("folder".to_string(), "directory"),
    ];
    for (p, kind) in &paths {
        // as the case file
        let r = sim_limited(&dir, &["check", p], Duration::from_secs(60));
        assert_eq!(r.code, Some(2), "case file {p}: {}: {}", r.describe(), r.stderr);
        assert!(r.stderr.contains(p.as_str()) && r.stderr.contains(kind), "case file {p}: {}", r.stderr);
        // as the point cloud of a case
        let case = format!("name: c\nsolver:\n  lskum: {{cloud: {p}, mach: 0.5}}\ntime: {{end_step: 2}}\n");
        write(&dir, "cloud.yaml", &case);
        for args in [&["check", "cloud.yaml"][..], &["run", "cloud.yaml", "--quiet"][..]] {
            let r = sim_limited(&dir, args, Duration::from_secs(60));
            assert_eq!(r.code, Some(2), "cloud {p}, {args:?}: {}: {}", r.describe(), r.stderr);
            assert!(r.stderr.contains(p.as_str()) && r.stderr.contains(kind), "cloud {p}: {}", r.stderr);
        }
    }
    assert!(!dir.join("out").exists(), "a refused case wrote output");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn oversized_case_file_is_refused_unread() {
    let dir = scratch("fuzz_big_case");
    let path = dir.join("big.yaml");
    // sparse: no disk space and nothing to read
    std::fs::File::create(&path).unwrap().set_len(sim::case::MAX_CASE_BYTES + 1).unwrap();
    match Case::load(&path) {
        Err(SimError::Input(m)) => assert!(m.contains("big.yaml") && m.contains("limit of 16 MiB"), "{m}"),
        other => panic!("expected an input error, got {other:?}"),
    }
    std::fs::remove_dir_all(dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Fuzz target: case files

/// YAML pieces that change structure or meaning.
const YAML_SNIPPETS: &[&str] = &[
    ":", ": ", " ", "\n", "  ", "\t", "- ", "{", "}", "[", "]", ",", "#", "'", "\"", "&a ", "*a", "!!str ",
    "!!float ", "!!binary ", "<<: *a", "~", "? ", "|\n", ">-\n", "---\n", "...\n", "%YAML 1.2\n", "\u{feff}",
    "\0", "é", "\r\n", "\\", "0", "-1", "1e309", ".nan", ".inf", "-.inf", "0x1F", "0o17", "1_0", "18446744073709551616",
    "99999999999", "4294967296", "65536", "true", "null", "n", "r", "name", "solver", "heat1d", "heat2d", "cavity",
    "lskum", "time", "end_step", "end_time", "output", "every_steps", "every_time", "dir", "checkpoint", "keep",
    "guard", "check_every", "precision", "f32", "backend", "cuda", "gpu", "block", "threads", "cloud", "format",
];

#[derive(Clone, Debug)]
enum TextEdit {
    Insert(Index, String),
    Delete(Index, usize),
    Replace(Index, usize, String),
    DuplicateLine(Index),
    DeleteLine(Index),
    SwapLines(Index, Index),
    Truncate(Index),
}

fn yaml_snippet() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(YAML_SNIPPETS).prop_map(String::from),
        2 => "\\PC{0,12}",
        1 => any::<String>(),
        1 => (2u32..=5).prop_map(|k| "x".repeat(10usize.pow(k))),
    ]
}

fn text_edit() -> impl Strategy<Value = TextEdit> {
    prop_oneof![
        4 => (any::<Index>(), yaml_snippet()).prop_map(|(i, s)| TextEdit::Insert(i, s)),
        2 => (any::<Index>(), 1usize..8).prop_map(|(i, n)| TextEdit::Delete(i, n)),
        3 => (any::<Index>(), 1usize..6, yaml_snippet()).prop_map(|(i, n, s)| TextEdit::Replace(i, n, s)),
        1 => any::<Index>().prop_map(TextEdit::DuplicateLine),
        1 => any::<Index>().prop_map(TextEdit::DeleteLine),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| TextEdit::SwapLines(a, b)),
        1 => any::<Index>().prop_map(TextEdit::Truncate),
    ]
}

fn apply_text_edit(text: &mut String, e: &TextEdit) {
    let cut = |t: &String, i: Index, n: usize| {
        let a = boundary(t, i);
        let mut b = (a + n).min(t.len());
        while !t.is_char_boundary(b) {
            b += 1;
        }
        (a, b)
    };
    match e {
        TextEdit::Insert(i, s) => {
            let p = boundary(text, *i);
            text.insert_str(p, s);
        }
        TextEdit::Delete(i, n) => {
            let (a, b) = cut(text, *i, *n);
            text.replace_range(a..b, "");
        }
        TextEdit::Replace(i, n, s) => {
            let (a, b) = cut(text, *i, *n);
            text.replace_range(a..b, s);
        }
        TextEdit::Truncate(i) => {
            let p = boundary(text, *i);
            text.truncate(p);
        }
        TextEdit::DuplicateLine(i) | TextEdit::DeleteLine(i) | TextEdit::SwapLines(i, _) => {
            let mut lines: Vec<String> = text.split('\n').map(String::from).collect();
            let k = i.index(lines.len());
            match e {
                TextEdit::DuplicateLine(_) => lines.insert(k, lines[k].clone()),
                TextEdit::DeleteLine(_) => {
                    lines.remove(k);
                }
                TextEdit::SwapLines(_, j) => {
                    let j = j.index(lines.len());
                    lines.swap(k, j);
                }
                _ => unreachable!(),
            }
            *text = lines.join("\n");
        }
    }
}

/// The case files shipped in `cases/`.
fn shipped_cases() -> Vec<String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("cases"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    v.sort();
    assert!(v.len() >= 10, "shipped cases: {v:?}");
    v.iter().map(|p| std::fs::read_to_string(p).unwrap()).collect()
}

/// A YAML tree, rendered in block or flow style.
#[derive(Clone, Debug)]
enum Node {
    Scalar(String),
    /// Entries, and whether in flow style.
    Map(Vec<(String, Node)>, bool),
    Seq(Vec<Node>, bool),
}

impl Node {
    fn render(&self) -> String {
        let mut s = String::new();
        match self {
            Node::Map(..) => self.block(0, &mut s),
            _ => {
                s.push_str(&self.flow());
                s.push('\n');
            }
        }
        s
    }
    fn flow(&self) -> String {
        match self {
            Node::Scalar(v) => v.clone(),
            Node::Map(e, _) => {
                format!("{{{}}}", e.iter().map(|(k, v)| format!("{k}: {}", v.flow())).collect::<Vec<_>>().join(", "))
            }
            Node::Seq(e, _) => format!("[{}]", e.iter().map(Node::flow).collect::<Vec<_>>().join(", ")),
        }
    }
    fn block(&self, indent: usize, s: &mut String) {
        let pad = " ".repeat(indent);
        match self {
            Node::Map(entries, false) if !entries.is_empty() => {
                for (k, v) in entries {
                    match v {
                        Node::Scalar(_) | Node::Map(_, true) | Node::Seq(_, true) => {
                            s.push_str(&format!("{pad}{k}: {}\n", v.flow()))
                        }
                        _ => {
                            s.push_str(&format!("{pad}{k}:\n"));
                            v.block(indent + 2, s);
                        }
                    }
                }
            }
            Node::Seq(items, false) if !items.is_empty() => {
                for v in items {
                    s.push_str(&format!("{pad}- {}\n", v.flow()));
                }
            }
            other => s.push_str(&format!("{pad}{}\n", other.flow())),
        }
    }
}

/// Scalars near the edges of what the keys take.
const SCALARS: &[&str] = &[
    "0", "1", "-1", "2", "3", "17", "33", "129", "0.2", "0.25", "0.26", "0.5", "0.51", "1.0e-3", "1e308", "-1e308",
    "1e-320", "5e-324", ".nan", ".inf", "-.inf", "-0.0", "~", "null", "true", "false", "''", "\"\"", "f32", "f64", "f16",
    "cpu", "cuda", "auto", "l2", "shared", "legacy", "old", "sim", "point-input", "venkat", "minmax", "ssprk43",
    "first", "second", "wall", "shape", "forward_euler", "18446744073709551615", "18446744073709551616",
    "9223372036854775808", "4294967296", "4097", "65536", "65537", "32768", "1073741824", "[]", "{}", "[1, 2]",
    "[512, 1]", "[1024, 2]", "[0, 0]", "[-1, 1]", "[1, -1]", "[1, 2, 3]", "meshes/naca0012_9600_legacy.txt",
    "meshes/naca0012_9600_oldformat.txt", "no/such/file.txt", "/dev/null", ".", "..", "out/../..", "h", "run-1",
    "a b", "0x10", "0o17", "1_000", "+1", "1.", ".5", "-0", "!!str 5", "!!float 1", "'quoted: text'",
];

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(SCALARS).prop_map(String::from),
        1 => any::<i64>().prop_map(|v| v.to_string()),
        1 => any::<u64>().prop_map(|v| v.to_string()),
        1 => any::<f64>().prop_map(|v| format!("{v:?}")),
        1 => (0u64..100_000).prop_map(|v| v.to_string()),
        1 => "[a-z_]{1,12}",
        1 => "\\PC{0,16}".prop_map(|s| format!("'{}'", s.replace('\'', "''"))),
    ]
}

/// Any YAML tree (keys not from the schema).
fn junk() -> impl Strategy<Value = Node> {
    scalar().prop_map(Node::Scalar).prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            (prop::collection::vec(("[a-z_]{1,8}", inner.clone()), 0..4), any::<bool>())
                .prop_map(|(e, f)| Node::Map(e, f)),
            (prop::collection::vec(inner, 0..4), any::<bool>()).prop_map(|(e, f)| Node::Seq(e, f)),
        ]
    })
}

/// The keys of a case, as nested maps; a leaf takes a scalar.
enum Schema {
    Leaf,
    Map(&'static [(&'static str, Schema)]),
    /// One of these keys (the solver).
    OneOf(&'static [(&'static str, Schema)]),
}

const L: Schema = Schema::Leaf;
const CASE: Schema = Schema::Map(&[
    ("name", L),
    ("description", L),
    (
        "solver",
        Schema::OneOf(&[
            ("heat1d", Schema::Map(&[("n", L), ("r", L), ("diffusivity", L), ("length", L), ("amplitude", L)])),
            ("heat2d", Schema::Map(&[("n", L), ("r", L), ("diffusivity", L), ("t0", L), ("domain", L)])),
            (
                "cavity",
                Schema::Map(&[
                    ("n", L),
                    ("re", L),
                    ("lid_velocity", L),
                    ("mach", L),
                    ("dt", L),
                    ("residual", Schema::Map(&[("every", L), ("tol", L)])),
                ]),
            ),
            (
                "lskum",
                Schema::Map(&[
                    ("cloud", L),
                    ("format", L),
                    ("mach", L),
                    ("aoa", L),
                    ("cfl", L),
                    ("inner_iterations", L),
                    ("vl_const", L),
                    ("power", L),
                    ("tscheme", L),
                    ("limiter", L),
                    ("accuracy", L),
                    ("forces", L),
                    ("residue_drop", L),
                ]),
            ),
        ]),
    ),
    ("precision", L),
    ("backend", L),
    ("gpu", Schema::Map(&[("variant", L), ("block", L), ("fast_math", L)])),
    ("threads", L),
    ("time", Schema::Map(&[("end_step", L), ("end_time", L)])),
    ("output", Schema::Map(&[("dir", L), ("every_steps", L), ("every_time", L)])),
    ("checkpoint", Schema::Map(&[("every_steps", L), ("keep", L)])),
    ("guard", Schema::Map(&[("check_every", L)])),
]);

/// A tree that mostly follows `schema`: keys kept, left out or given junk, now and then an
/// unknown key.
fn following(schema: &'static Schema) -> BoxedStrategy<Node> {
    match schema {
        Schema::Leaf => prop_oneof![9 => scalar().prop_map(Node::Scalar), 1 => junk()].boxed(),
        Schema::Map(fields) => {
            let entries: Vec<BoxedStrategy<Option<(String, Node)>>> = fields
                .iter()
                .map(|(k, s)| {
                    let key = k.to_string();
                    prop_oneof![
                        6 => following(s).prop_map(move |v| Some((key.clone(), v))),
                        3 => Just(None),
                        1 => junk().prop_map(move |v| Some((k.to_string(), v))),
                    ]
                    .boxed()
                })
                .collect();
            let extra = prop::option::weighted(0.1, ("[a-z_]{1,10}", junk()));
            (entries, extra, prop::bool::weighted(0.3))
                .prop_map(|(entries, extra, flow)| {
                    let mut e: Vec<(String, Node)> = entries.into_iter().flatten().collect();
                    e.extend(extra);
                    Node::Map(e, flow)
                })
                .boxed()
        }
        Schema::OneOf(options) => {
            let one = prop::sample::select((0..options.len()).collect::<Vec<_>>());
            (one, prop::bool::weighted(0.05))
                .prop_flat_map(move |(k, two)| {
                    let (name, s) = &options[k];
                    let (other, s2) = &options[(k + 1) % options.len()];
                    let mut v = vec![following(s).prop_map(move |n| (name.to_string(), n)).boxed()];
                    if two {
                        v.push(following(s2).prop_map(move |n| (other.to_string(), n)).boxed());
                    }
                    (v, prop::bool::weighted(0.2)).prop_map(|(e, flow)| Node::Map(e, flow))
                })
                .boxed()
        }
    }
}

#[derive(Clone, Debug)]
enum CaseInput {
    /// A shipped case (index) with edits.
    Mutated(usize, Vec<TextEdit>),
    /// Generated YAML, with edits.
    Generated(Node, Vec<TextEdit>),
}

/// Checks `sim check` on a sample of the case inputs, in a scratch directory whose `meshes`
/// links to the shipped clouds.
struct CheckSample {
    dir: PathBuf,
    every: usize,
    seen: AtomicUsize,
    ran: AtomicUsize,
}

impl CheckSample {
    fn new(every: usize) -> Self {
        let dir = scratch("fuzz_check");
        std::os::unix::fs::symlink(Path::new(ROOT).join("meshes"), dir.join("meshes")).unwrap();
        CheckSample { dir, every, seen: AtomicUsize::new(0), ran: AtomicUsize::new(0) }
    }

    /// Run `sim check` on `text` if it is this one's turn; `parsed` is the in-process result.
    fn check(&self, text: &str, parsed: &Result<Case, SimError>) -> Result<(), TestCaseError> {
        if !self.seen.fetch_add(1, Ordering::Relaxed).is_multiple_of(self.every) {
            return Ok(());
        }
        // `sim check` builds the solver, fields included, so cases with large fields (up to
        // the supported 65536^2 nodes of heat2d) are left to the in-process checks.
        if let Ok(case) = parsed
            && case.solver.kind() != "lskum"
            && case.solver.spec().memory_estimate(case.precision) > 256 << 20
        {
            return Ok(());
        }
        self.ran.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join("fuzz.yaml");
        std::fs::write(&path, text).unwrap();
        let before = tree(&self.dir);
        let r = sim_limited(&self.dir, &["check", "fuzz.yaml"], Duration::from_secs(120));
        let after = tree(&self.dir);
        if !matches!(r.code, Some(0 | 2)) || r.stderr.contains("panicked") {
            return fail(format!("sim check: {}\n{}", r.describe(), r.stderr));
        }
        if r.stderr.len() > 5000 {
            return fail(format!("sim check: {} bytes on stderr", r.stderr.len()));
        }
        if before != after {
            return fail("sim check changed its directory".into());
        }
        if parsed.is_err() && r.code != Some(2) {
            return fail(format!("sim check accepted a case that Case::parse rejects: {}", r.stderr));
        }
        Ok(())
    }
}

/// Parse and validate `text` in process: a case or an input error naming the file, in a
/// message of bounded length.
fn parse_case(text: &str) -> Result<Result<Case, SimError>, TestCaseError> {
    let r = Case::parse(text, "fuzz.yaml");
    match &r {
        Ok(case) => {
            if let Err(e) = case.validate() {
                return Err(TestCaseError::fail(format!("parsed case fails validation: {e}")));
            }
        }
        Err(SimError::Input(m)) => {
            if !m.starts_with("case file fuzz.yaml") {
                return Err(TestCaseError::fail(format!("message does not name the file: {m}")));
            }
            if m.len() > 4000 || filler_per_line(m, 'x') > 2 * QUOTE_MAX {
                return Err(TestCaseError::fail(format!("message of {} bytes quotes too much: {m}", m.len())));
            }
        }
        Err(e) => return Err(TestCaseError::fail(format!("not an input error: {e}"))),
    }
    Ok(r)
}

#[test]
fn fuzz_case_files() {
    let shipped = shipped_cases();
    let n = shipped.len();
    let input = prop_oneof![
        3 => (0..n, prop::collection::vec(text_edit(), 1..5)).prop_map(|(k, e)| CaseInput::Mutated(k, e)),
        2 => (following(&CASE), prop::collection::vec(text_edit(), 0..3)).prop_map(|(t, e)| CaseInput::Generated(t, e)),
        1 => (junk(), prop::collection::vec(text_edit(), 0..2)).prop_map(|(t, e)| CaseInput::Generated(t, e)),
    ];
    let sample = CheckSample::new(16);
    let (parsed, rejected) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let t0 = Instant::now();
    let r = runner("case_files", cases(600), 500).run(&input, |c| {
        let (mut text, edits) = match &c {
            CaseInput::Mutated(k, e) => (shipped[*k].clone(), e),
            CaseInput::Generated(t, e) => (t.render(), e),
        };
        for e in edits {
            apply_text_edit(&mut text, e);
        }
        let r = parse_case(&text)?;
        (if r.is_ok() { &parsed } else { &rejected }).fetch_add(1, Ordering::Relaxed);
        sample.check(&text, &r)
    });
    eprintln!(
        "case files: {} parsed and valid, {} rejected, {} through sim check, {:.1} s",
        parsed.load(Ordering::Relaxed),
        rejected.load(Ordering::Relaxed),
        sample.ran.load(Ordering::Relaxed),
        t0.elapsed().as_secs_f64()
    );
    finish("case_files", r);
    // the generator reaches valid cases, not only the parser's first error
    assert!(parsed.load(Ordering::Relaxed) > 0 && sample.ran.load(Ordering::Relaxed) > 0);
    let _ = std::fs::remove_dir_all(&sample.dir);
}

// ---------------------------------------------------------------------------------------------
// Fuzz target: point clouds

/// Small valid clouds: (format, text).
fn base_clouds() -> Vec<(CloudFormat, String)> {
    use sim::mesh::ogrid::{OGrid, ogrid};
    use sim::solvers::lskum::cloud::NONE;
    let g = ogrid(&OGrid { ni: 16, nj: 4, first_spacing: 0.5, ..Default::default() }).unwrap();
    let dir = scratch("fuzz_clouds");
    g.write_legacy(&dir.join("legacy.txt")).unwrap();
    g.write_sim(&dir.join("sim.txt")).unwrap();
    let legacy = std::fs::read_to_string(dir.join("legacy.txt")).unwrap();
    let simf = std::fs::read_to_string(dir.join("sim.txt")).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    let one = |v: u32| if v == NONE { 0 } else { v as u64 + 1 };
    let links = |i: usize| {
        let c = g.conn.of(i);
        format!("{} {}", c.len(), c.iter().map(|k| (k + 1).to_string()).collect::<Vec<_>>().join(" "))
    };
    let mut old = format!("{}\n", g.len());
    let mut point_input = String::new();
    for i in 0..g.len() {
        old += &format!(
            "{} {} {:?} {:?} {:?} {:?} {} {} {}\n",
            i + 1,
            i + 1,
            g.x[i],
            g.y[i],
            g.nx[i],
            g.ny[i],
            g.flag[i] + 1,
            g.shape[i],
            links(i)
        );
        point_input += &format!(
            "{} {:?} {:?} {} {} {} {} {}\n",
            i + 1,
            g.x[i],
            g.y[i],
            one(g.left[i]),
            one(g.right[i]),
            g.flag[i],
            g.shape[i],
            links(i)
        );
    }
    let v = vec![
        (CloudFormat::Legacy, legacy),
        (CloudFormat::Sim, simf),
        (CloudFormat::Old, old),
        (CloudFormat::PointInput, point_input),
    ];
    for (f, t) in &v {
        if let Err(e) = cloud_file::parse(t, "base.txt", *f) {
            panic!("base cloud in the {} format does not load: {e}", f.name());
        }
    }
    v
}

/// Values near the edges of what the fields take.
const TOKENS: &[&str] = &[
    "0", "1", "-1", "2", "3", "4", "63", "64", "65", "10000", "10001", "4294967295", "4294967296",
    "18446744073709551615", "18446744073709551616", "1000000000", "-9223372036854775808", "9223372036854775808",
    "nan", "NaN", "inf", "-inf", "1e400", "1d5", "1D-3", "0.0", "-0.0", "1e-320", "5e-324", "1e308", "x", "", "#",
    "\u{a0}", "é", "\t", "1.0.0", "--1", "+1", "0x10", "99999999999999999999999999999999999999999999",
];

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(TOKENS).prop_map(String::from),
        2 => (0i64..80).prop_map(|v| v.to_string()),
        1 => any::<i64>().prop_map(|v| v.to_string()),
        1 => (-3.0f64..3.0).prop_map(|v| format!("{v:?}")),
        1 => "\\PC{0,6}",
        1 => (2u32..=5).prop_map(|k| "7".repeat(10usize.pow(k))),
    ]
}

#[derive(Clone, Debug)]
enum CloudEdit {
    SetToken(Index, Index, String),
    InsertToken(Index, Index, String),
    DeleteToken(Index, Index),
    DeleteLine(Index),
    DuplicateLine(Index),
    SwapLines(Index, Index),
    InsertLine(Index, String),
    Text(TextEdit),
}

fn cloud_edit() -> impl Strategy<Value = CloudEdit> {
    let at = || (any::<Index>(), any::<Index>());
    prop_oneof![
        6 => (at(), token()).prop_map(|((l, t), s)| CloudEdit::SetToken(l, t, s)),
        2 => (at(), token()).prop_map(|((l, t), s)| CloudEdit::InsertToken(l, t, s)),
        2 => at().prop_map(|(l, t)| CloudEdit::DeleteToken(l, t)),
        1 => any::<Index>().prop_map(CloudEdit::DeleteLine),
        1 => any::<Index>().prop_map(CloudEdit::DuplicateLine),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| CloudEdit::SwapLines(a, b)),
        1 => (any::<Index>(), prop::collection::vec(token(), 0..12)).prop_map(|(l, t)| CloudEdit::InsertLine(l, t.join(" "))),
        2 => text_edit().prop_map(CloudEdit::Text),
    ]
}

fn apply_cloud_edit(text: &mut String, e: &CloudEdit) {
    if let CloudEdit::Text(t) = e {
        apply_text_edit(text, t);
        return;
    }
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let n = lines.len();
    match e {
        CloudEdit::SetToken(l, t, _) | CloudEdit::InsertToken(l, t, _) | CloudEdit::DeleteToken(l, t)
            if !lines[l.index(n)].is_empty() =>
        {
            let line = &mut lines[l.index(n)];
            let mut tokens: Vec<String> = line.split_ascii_whitespace().map(String::from).collect();
            if tokens.is_empty() {
                tokens.push(String::new());
            }
            let k = t.index(tokens.len());
            match e {
                CloudEdit::SetToken(..) => tokens[k] = s_of(e).to_string(),
                CloudEdit::InsertToken(..) => tokens.insert(k, s_of(e).to_string()),
                _ => {
                    tokens.remove(k);
                }
            }
            *line = tokens.join(" ");
        }
        CloudEdit::DeleteLine(l) => {
            lines.remove(l.index(n));
        }
        CloudEdit::DuplicateLine(l) => {
            let k = l.index(n);
            lines.insert(k, lines[k].clone());
        }
        CloudEdit::SwapLines(a, b) => lines.swap(a.index(n), b.index(n)),
        CloudEdit::InsertLine(l, s) => lines.insert(l.index(n + 1), s.clone()),
        _ => {}
    }
    *text = lines.join("\n");
}

fn s_of(e: &CloudEdit) -> &str {
    match e {
        CloudEdit::SetToken(_, _, s) | CloudEdit::InsertToken(_, _, s) => s,
        _ => "",
    }
}

#[test]
fn fuzz_cloud_files() {
    let bases = base_clouds();
    let formats = [CloudFormat::Legacy, CloudFormat::Sim, CloudFormat::Old, CloudFormat::PointInput];
    let input = (
        0..bases.len(),
        prop::option::weighted(0.1, prop::sample::select(formats.to_vec())),
        prop::collection::vec(cloud_edit(), 1..5),
    );
    let (loaded, rejected) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let t0 = Instant::now();
    let r = runner("cloud_files", cases(1000), 500).run(&input, |(k, other, edits)| {
        let (format, base) = &bases[k];
        let format = other.unwrap_or(*format);
        let mut text = base.clone();
        for e in &edits {
            apply_cloud_edit(&mut text, e);
        }
        match cloud_file::parse(&text, "fuzz.txt", format) {
            Ok(c) => {
                if c.is_empty() || c.x.len() != c.conn.len() {
                    return fail(format!("inconsistent cloud of {} points", c.len()));
                }
                loaded.fetch_add(1, Ordering::Relaxed);
            }
            Err(SimError::Input(m)) => {
                if !m.starts_with("fuzz.txt") {
                    return fail(format!("message does not name the file: {m}"));
                }
                // (line and point numbers may hold a few more 7s)
                if m.len() > 2000 || filler_per_line(&m, '7') > QUOTE_MAX + 20 {
                    return fail(format!("message of {} bytes quotes too much: {m}", m.len()));
                }
                rejected.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => return fail(format!("not an input error: {e}")),
        }
        Ok(())
    });
    eprintln!(
        "clouds: {} loaded, {} rejected, {:.1} s",
        loaded.load(Ordering::Relaxed),
        rejected.load(Ordering::Relaxed),
        t0.elapsed().as_secs_f64()
    );
    finish("cloud_files", r);
    // some mutations (e.g. of a value in range) still load: the fuzz gets past the first check
    assert!(loaded.load(Ordering::Relaxed) > 0);
}

// ---------------------------------------------------------------------------------------------
// Fuzz target: checkpoints

/// A small real checkpoint (heat1d, step 4 of 8) and the byte ranges of its contents: the
/// stored case text, the string attributes and the field values.
struct Checkpoint {
    dir: PathBuf,
    bytes: Vec<u8>,
    /// (start, length, text): the text ranges take ASCII bytes only (see
    /// `checkpoint_case_text_with_invalid_utf8`).
    content: Vec<(usize, usize, bool)>,
}

fn small_checkpoint(name: &str) -> Checkpoint {
    let dir = scratch(name);
    let case = "name: h\nsolver:\n  heat1d: {n: 17, r: 0.4}\ntime: {end_step: 8}\nguard: {check_every: 1}\n";
    write(&dir, "h.yaml", case);
    ok(sim(&dir, &["run", "h.yaml", "--steps", "4", "--quiet"]));
    let path = dir.join("out/h/checkpoint_00000004.h5");
    let bytes = std::fs::read(&path).unwrap();
    let (meta, arrays) = sim::io::checkpoint::read(&path).unwrap();
    let mut needles: Vec<(Vec<u8>, bool)> =
        vec![(meta.case_yaml.into_bytes(), true), (b"heat1d".to_vec(), true), (b"f64".to_vec(), true)];
    for a in &arrays {
        needles.push((a.values.to_f64().iter().flat_map(|v| v.to_le_bytes()).collect(), false));
    }
    let content: Vec<(usize, usize, bool)> = needles
        .iter()
        .filter_map(|(n, text)| bytes.windows(n.len()).position(|w| w == n.as_slice()).map(|p| (p, n.len(), *text)))
        .collect();
    assert!(
        content.len() >= 3 && content[0].2 && content.iter().any(|c| !c.2),
        "case text, solver name and field not found in the checkpoint: {content:?}"
    );
    Checkpoint { dir, bytes, content }
}

#[derive(Clone, Debug)]
enum ByteEdit {
    /// Set the byte at a position in a content range.
    Content(Index, Index, u8),
    /// Write an f64 at an 8-byte step of a field's values.
    Value(Index, Index, f64),
    /// Set a byte anywhere.
    Anywhere(Index, u8),
    /// Flip a bit anywhere.
    Flip(Index, u8),
    Truncate(Index),
    Append(Vec<u8>),
}

fn content_edit() -> impl Strategy<Value = ByteEdit> {
    let byte = prop_oneof![
        4 => any::<u8>(),
        2 => prop::sample::select(b"{}[]:,-\n #&*!'\"0123456789.e".to_vec()),
        1 => prop::sample::select(vec![0u8, 0x80, 0xC3, 0xFF]),
    ];
    let value = prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::MAX),
        Just(-0.0),
        Just(5e-324),
        any::<f64>(),
    ];
    prop_oneof![
        6 => (any::<Index>(), any::<Index>(), byte).prop_map(|(r, i, b)| ByteEdit::Content(r, i, b)),
        2 => (any::<Index>(), any::<Index>(), value).prop_map(|(r, i, v)| ByteEdit::Value(r, i, v)),
        2 => any::<Index>().prop_map(ByteEdit::Truncate),
        1 => prop::collection::vec(any::<u8>(), 1..64).prop_map(ByteEdit::Append),
    ]
}

fn anywhere_edit() -> impl Strategy<Value = ByteEdit> {
    prop_oneof![
        4 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| ByteEdit::Anywhere(i, b)),
        4 => (any::<Index>(), 0u8..8).prop_map(|(i, b)| ByteEdit::Flip(i, b)),
        1 => any::<Index>().prop_map(ByteEdit::Truncate),
    ]
}

fn apply_byte_edit(bytes: &mut Vec<u8>, content: &[(usize, usize, bool)], e: &ByteEdit) {
    let n = bytes.len();
    match e {
        ByteEdit::Content(r, i, b) => {
            let (start, len, text) = content[r.index(content.len())];
            let p = start + i.index(len);
            if p < n {
                bytes[p] = if text { b & 0x7f } else { *b };
            }
        }
        ByteEdit::Value(r, i, v) => {
            let values: Vec<_> = content.iter().filter(|c| !c.2).collect();
            let (start, len, _) = *values[r.index(values.len())];
            let p = start + 8 * i.index(len.div_ceil(8));
            if p + 8 <= n {
                bytes[p..p + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        ByteEdit::Anywhere(i, b) if n > 0 => bytes[i.index(n)] = *b,
        ByteEdit::Flip(i, bit) if n > 0 => bytes[i.index(n)] ^= 1 << bit,
        ByteEdit::Truncate(i) => bytes.truncate(i.index(n + 1)),
        ByteEdit::Append(extra) => bytes.extend_from_slice(extra),
        _ => {}
    }
}

/// Restart each mutated copy of `ck` in its own directory under `ck.dir/runs`.
fn fuzz_restarts(target: &str, ck: &Checkpoint, cases: u32, edit: BoxedStrategy<ByteEdit>) {
    let runs = ck.dir.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    // everything outside the directory of a restart: the run that wrote the checkpoint and a
    // file beside it
    write(&ck.dir, "outside.txt", "left alone");
    let outside = || tree(&ck.dir).into_iter().filter(|(p, _)| !p.starts_with(&runs)).collect::<Vec<_>>();
    let before = outside();
    let counter = AtomicUsize::new(0);
    let codes = std::sync::Mutex::new(std::collections::BTreeMap::<i32, usize>::new());
    let t0 = Instant::now();
    // each step of shrinking is a restart, up to the time limit where one hangs
    let r = runner(target, cases, 32).run(&prop::collection::vec(edit, 1..4), |edits| {
        let mut bytes = ck.bytes.clone();
        for e in &edits {
            apply_byte_edit(&mut bytes, &ck.content, e);
        }
        let dir = runs.join(counter.fetch_add(1, Ordering::Relaxed).to_string());
        std::fs::create_dir_all(dir.join("run")).unwrap();
        std::fs::write(dir.join("run/checkpoint_00000004.h5"), &bytes).unwrap();
        let r = sim_limited(&dir, &["run", "--restart", "run/checkpoint_00000004.h5", "--quiet"], Duration::from_secs(30));
        let fine = match r.code {
            Some(0 | 2) => true,
            // a value made non-finite: the guard stops the run
            Some(1) => r.stderr.contains("non-finite value"),
            _ => false,
        };
        if !fine || r.stderr.contains("panicked") {
            return fail(format!("sim run --restart: {}\n{}", r.describe(), r.stderr));
        }
        if outside() != before {
            return fail("the restart changed files outside its directory".into());
        }
        *codes.lock().unwrap().entry(r.code.unwrap()).or_default() += 1;
        std::fs::remove_dir_all(&dir).unwrap();
        Ok(())
    });
    eprintln!("{target}: exit codes {:?}, {:.1} s", codes.lock().unwrap(), t0.elapsed().as_secs_f64());
    finish(target, r);
}

/// A byte of the stored case text made invalid UTF-8. The HDF5 crate's `VarLenUnicode::as_str`
/// does not check the bytes, so the checkpoint reader hands the YAML parser a `&str` that is
/// not UTF-8, and the parser panics (exit code 101).
#[test]
fn checkpoint_case_text_with_invalid_utf8() {
    let ck = small_checkpoint("fuzz_ck_utf8");
    let (start, _, _) = ck.content[0];
    let mut bytes = ck.bytes.clone();
    bytes[start + 1] = 0x80;
    let dir = ck.dir.join("utf8");
    std::fs::create_dir_all(dir.join("run")).unwrap();
    std::fs::write(dir.join("run/checkpoint_00000004.h5"), &bytes).unwrap();
    let r = sim_limited(&dir, &["run", "--restart", "run/checkpoint_00000004.h5", "--quiet"], Duration::from_secs(120));
    assert_eq!(r.code, Some(2), "{}: {}", r.describe(), r.stderr);
    assert!(r.stderr.contains("checkpoint_00000004.h5") && r.stderr.contains("UTF-8"), "{}", r.stderr);
    std::fs::remove_dir_all(&ck.dir).unwrap();
}

#[test]
fn fuzz_checkpoints() {
    let ck = small_checkpoint("fuzz_ck");
    fuzz_restarts("checkpoints", &ck, cases(400).div_ceil(16), content_edit().boxed());
    std::fs::remove_dir_all(&ck.dir).unwrap();
}

/// Byte mutations anywhere in the file, HDF5's own structures included. The HDF5 library
/// (1.10) does not survive all of them: corrupt object headers or global-heap references
/// crash it or send it into an endless loop (`h5dump` too), before sim sees any data; the
/// restart walks the file in a child process first and reports those as damaged (see
/// `damaged_hdf5_structures_are_reported_not_crashed_on`).
#[test]
fn fuzz_checkpoint_structures() {
    let ck = small_checkpoint("fuzz_ck_any");
    fuzz_restarts("checkpoint_structures", &ck, cases(3200).div_ceil(16), anywhere_edit().boxed());
    std::fs::remove_dir_all(&ck.dir).unwrap();
}

/// Two damaged global-heap entries (where HDF5 keeps the attribute strings) that HDF5 1.10
/// does not survive: an object size made huge crashes it (SIGSEGV), one made slightly off
/// sends it into an endless loop. The restart reports both as a damaged file (exit 2), leaves
/// its directory as it was and no core file behind.
#[test]
fn damaged_hdf5_structures_are_reported_not_crashed_on() {
    let ck = small_checkpoint("fuzz_ck_heap");
    for (edit, damage, says) in
        [("crash", HeapDamage::Crash, "the HDF5 library failed reading it"), ("loop", HeapDamage::Loop, "did not finish")]
    {
        let dir = ck.dir.join(edit);
        std::fs::create_dir_all(dir.join("run")).unwrap();
        std::fs::write(dir.join("run/checkpoint_00000004.h5"), damaged_heap(&ck.bytes, damage)).unwrap();
        let before = snapshot(&dir);
        let r = sim_limited(&dir, &["run", "--restart", "run/checkpoint_00000004.h5", "--quiet"], Duration::from_secs(60));
        assert_eq!(r.code, Some(2), "{edit}: {}: {}", r.describe(), r.stderr);
        for needle in ["checkpoint_00000004.h5", says, "damaged"] {
            assert!(r.stderr.contains(needle), "{edit}: {needle:?} not in {}", r.stderr);
        }
        assert_eq!(snapshot(&dir), before, "{edit}: the restart changed its directory");
    }
    std::fs::remove_dir_all(&ck.dir).unwrap();
}
