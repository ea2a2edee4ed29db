//! Error type shared by the whole crate; the variant decides the process exit code. Also the
//! helpers that keep input errors readable and input reading bounded: [`shorten`] and
//! [`quote`] for echoing input text, [`shorten_message`] for messages of parsers that quote
//! input themselves, and [`read_text_file`] for reading an input file.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;
use std::path::Path;

#[derive(Debug)]
pub enum SimError {
    /// Bad input: case file, command line, checkpoint or mesh (exit code 2).
    Input(String),
    /// The run itself failed, e.g. a non-finite value appeared (exit code 1).
    Run(String),
    /// Stopped by a signal (SIGINT, SIGTERM, SIGHUP) after writing a checkpoint: exit code
    /// 128 + the signal number (130, 143, 129).
    Interrupted(String, i32),
    /// Under MPI: another rank failed and reported it; this one exits with that rank's code
    /// and prints nothing.
    Quiet(i32),
}

pub type Result<T> = std::result::Result<T, SimError>;

impl SimError {
    pub fn exit_code(&self) -> i32 {
        match self {
            SimError::Input(_) => 2,
            SimError::Run(_) => 1,
            SimError::Interrupted(_, signal) => 128 + signal,
            SimError::Quiet(code) => *code,
        }
    }

    /// The error as rank `rank` of `size` reports it: the message names the rank when there
    /// are several.
    pub fn on_rank(self, rank: usize, size: usize) -> SimError {
        let prefix = format!("rank {rank} of {size}: ");
        let named = |m: String| if size > 1 && !m.starts_with(&prefix) { format!("{prefix}{m}") } else { m };
        match self {
            SimError::Input(m) => SimError::Input(named(m)),
            SimError::Run(m) => SimError::Run(named(m)),
            SimError::Interrupted(m, s) => SimError::Interrupted(named(m), s),
            quiet @ SimError::Quiet(_) => quiet,
        }
    }
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Input(m) | SimError::Run(m) | SimError::Interrupted(m, _) => f.write_str(&compact_numbers(m)),
            SimError::Quiet(_) => Ok(()),
        }
    }
}

impl std::error::Error for SimError {}

/// `eprintln!` that ignores a failed write: a reader of stderr that went away (`sim run CASE
/// 2>&1 | head`) must not stop a run with a panic.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Shorthand for a bad-input error.
pub fn input<T>(msg: impl Into<String>) -> Result<T> {
    Err(SimError::Input(msg.into()))
}

// ---------------------------------------------------------------------------------------------
// Quoting input

/// The most characters of one piece of input text that an error message quotes.
pub const QUOTE_MAX: usize = 200;

/// `text` shortened to at most `max` of its characters: whole when it is no longer, otherwise
/// its start and its end around `…[N characters omitted]…`.
pub fn shorten_to(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let n = text.chars().count();
    if n <= max {
        return Cow::Borrowed(text);
    }
    let tail = max / 4;
    let head = max - tail;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text.char_indices().nth(n - tail).map_or(text.len(), |(i, _)| i);
    Cow::Owned(format!("{}…[{} characters omitted]…{}", &text[..head_end], n - head - tail, &text[tail_start..]))
}

/// `text` shortened to at most [`QUOTE_MAX`] characters (see [`shorten_to`]).
pub fn shorten(text: &str) -> Cow<'_, str> {
    shorten_to(text, QUOTE_MAX)
}

/// `text` in double quotes with Rust string escapes, shortened to at most [`QUOTE_MAX`] of its
/// characters: how error messages quote a piece of input.
pub fn quote(text: &str) -> String {
    format!("{:?}", shorten(text))
}

/// A message of a parser that quotes the input itself (`unknown variant `…``, `string "…"`),
/// each quoted span shortened to [`QUOTE_MAX`] characters, and each line, in case it quotes
/// input without quotes, to 2 [`QUOTE_MAX`] characters.
pub fn shorten_message(msg: &str) -> String {
    if msg.lines().all(|l| l.len() <= QUOTE_MAX) {
        return msg.to_string();
    }
    let lines: Vec<String> = msg
        .split('\n')
        .map(|line| {
            let spans = shorten_quoted_spans(line);
            shorten_to(&spans, 2 * QUOTE_MAX).into_owned()
        })
        .collect();
    lines.join("\n")
}

/// `line` with the text between matching quotes (`` ` `` or `"`, where `\` escapes in the
/// latter) shortened; an unclosed quote runs to the end of the line.
fn shorten_quoted_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len().min(4 * QUOTE_MAX));
    let mut rest = line;
    while let Some(open) = rest.find(['`', '"']) {
        let q = rest.as_bytes()[open] as char;
        out.push_str(&rest[..=open]);
        let body = &rest[open + 1..];
        let close = span_end(body, q);
        // A span shortened before (a message quoted into another) keeps its count.
        let span = &body[..close];
        out.push_str(if span.contains(" characters omitted]…") { span.into() } else { shorten(span) }.as_ref());
        match body[close..].chars().next() {
            Some(c) => {
                out.push(c);
                rest = &body[close + c.len_utf8()..];
            }
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}

/// The most characters of a number written out in full in a message (f64's `Display` writes
/// 1e300 with 301 digits).
const NUMBER_MAX: usize = 24;

/// `text` with every number longer than [`NUMBER_MAX`] characters (digits with at most one
/// point, standing alone: not part of a name, path or hex string) in exponent form.
pub fn compact_numbers(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut out = String::new();
    let (mut done, mut i) = (0, 0);
    while i < b.len() {
        let starts = b[i].is_ascii_digit() && (i == 0 || !(word(b[i - 1]) || b[i - 1] == b'.' || b[i - 1] == b'/'));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j + 1 < b.len() && b[j] == b'.' && b[j + 1].is_ascii_digit() {
            j += 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
        }
        let alone = j == b.len() || !word(b[j]);
        if alone && j - i > NUMBER_MAX
            && let Ok(x) = text[i..j].parse::<f64>()
        {
            out.push_str(&text[done..i]);
            out.push_str(&format!("{x:e}"));
            done = j;
        }
        i = j;
    }
    if done == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[done..]);
    Cow::Owned(out)
}

/// Byte index in `body` of the quote `q` that closes a span (or `body.len()`).
fn span_end(body: &str, q: char) -> usize {
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' && q == '"' {
            escaped = true;
        } else if c == q {
            return i;
        }
    }
    body.len()
}

// ---------------------------------------------------------------------------------------------
// Reading input files

/// `bytes` as a size for messages: whole GiB or MiB where it is one, else bytes.
fn size_text(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

/// The kind of a file that is not a regular file, for messages.
fn file_kind(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Read the input file `path` as UTF-8 text; `what` names it in messages ("case file").
/// Only a regular file of at most `limit` bytes is read: directories, FIFOs and devices are
/// refused before they are opened (a FIFO blocks, `/dev/zero` never ends), and invalid UTF-8
/// is an error giving its byte offset, line and column. Every error is an input error naming
/// the file.
pub fn read_text_file(path: &Path, what: &str, limit: u64) -> Result<String> {
    let shown = path.display();
    let cannot = |e: std::io::Error| SimError::Input(format!("cannot read {what} {shown}: {e}"));
    let regular = |meta: &std::fs::Metadata| -> Result<()> {
        let t = meta.file_type();
        if !t.is_file() {
            return input(format!("cannot read {what} {shown}: it is {}, not a regular file", file_kind(t)));
        }
        if meta.len() > limit {
            return too_large(what, path, meta.len(), limit);
        }
        Ok(())
    };
    // stat first: opening a FIFO would wait for a writer
    regular(&std::fs::metadata(path).map_err(cannot)?)?;
    let file = std::fs::File::open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    regular(&meta)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // a file may grow after the check, or report size 0 (procfs): read one byte past the limit
    file.take(limit + 1).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > limit {
        return too_large(what, path, bytes.len() as u64, limit);
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let line_start = bytes[..at].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let line = bytes[..line_start].iter().filter(|&&b| b == b'\n').count() + 1;
        // the bytes before `at` are valid UTF-8
        let column = std::str::from_utf8(&bytes[line_start..at]).map_or(0, |s| s.chars().count()) + 1;
        SimError::Input(format!("{what} {shown}: invalid UTF-8 at byte {at} (line {line}, column {column})"))
    })
}

fn too_large<T>(what: &str, path: &Path, size: u64, limit: u64) -> Result<T> {
    input(format!(
        "cannot read {what} {}: it holds {} bytes, more than the limit of {} for a {what}",
        path.display(),
        size,
        size_text(limit)
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_numbers_are_written_in_exponent_form() {
        let big = format!("r: {} must be", 1e300);
        assert_eq!(super::compact_numbers(&big), "r: 1e300 must be");
        let small = format!("x = -{} and {}", 1e-300, 0.5);
        assert_eq!(super::compact_numbers(&small), "x = -1e-300 and 0.5");
        // Short numbers, names, paths and hex strings stay as they are.
        let digits = "9".repeat(30);
        for s in [
            "step 18446744073709551615 of 12".to_string(),
            format!("/tmp/run_{digits}/checkpoint_{digits}.h5"),
            format!("sha256:{digits}abc"),
            format!("v{digits}"),
        ] {
            assert_eq!(super::compact_numbers(&s), s);
        }
    }

    use super::*;

    #[test]
    fn shorten_keeps_short_text_and_cuts_long_text() {
        assert_eq!(shorten("abc"), "abc");
        let exact = "é".repeat(QUOTE_MAX);
        assert_eq!(shorten(&exact), exact.as_str());
        let long = format!("{}{}", "q".repeat(1000), "z".repeat(1000));
        let s = shorten(&long);
        assert!(s.starts_with(&"q".repeat(150)) && s.ends_with(&"z".repeat(50)), "{s}");
        assert!(s.contains("…[1800 characters omitted]…"), "{s}");
        let input_chars = s.chars().filter(|&c| c == 'q' || c == 'z').count();
        assert_eq!(input_chars, QUOTE_MAX);
        // multi-byte characters are cut at character boundaries
        let wide = "ü".repeat(5000);
        assert_eq!(shorten(&wide).chars().filter(|&c| c == 'ü').count(), QUOTE_MAX);
        assert_eq!(quote("a\"b"), "\"a\\\"b\"");
    }

    #[test]
    fn shorten_message_cuts_quoted_spans_and_long_lines() {
        let x = "x".repeat(100_000);
        let msg = format!("key solver: unknown variant `{x}`, expected one of `heat1d`, `heat2d`\n  | ^ invalid \"{x}\\\"{x}\"\nplain {x}");
        let s = shorten_message(&msg);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 3, "{s}");
        assert!(lines[0].starts_with("key solver: unknown variant `xxx"), "{s}");
        assert!(lines[0].ends_with("`, expected one of `heat1d`, `heat2d`"), "{s}");
        for l in &lines {
            assert!(l.chars().filter(|&c| c == 'x').count() <= 2 * QUOTE_MAX, "{l}");
            assert!(l.len() < 3 * QUOTE_MAX, "{l}");
        }
        // the escaped quote does not end the span
        assert!(lines[1].contains("[199802 characters omitted]") && lines[1].ends_with("xxxxx\""), "{s}");
        assert_eq!(shorten_message("short `message`"), "short `message`");
        // A value quoted and shortened before keeps its count when the message is quoted on.
        let quoted = format!("name: {} is too long", quote(&"n".repeat(500)));
        assert!(shorten_message(&format!("file c.yaml: {quoted}")).contains("[300 characters omitted]"));
    }
}
