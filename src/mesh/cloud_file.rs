//! Point-cloud files: the text readers for the reference formats and the `sim` format, the
//! validation of a cloud read from a file (duplicates, boundary links, normals, min_dist,
//! split stencils), and the writers of the legacy and `sim` formats.
//!
//! Formats (whitespace separated, one point per line, indices 1-based):
//! * `legacy` (F5): optional header `N`, then `x y left right flag_1 flag_2 min_dist nbhs c_1 ... c_nbhs`
//! * `old` (F1, 2019): header `N`, then `local_id global_id x y nx ny flag_1 flag_2 nbhs c...`
//!   with flag_1 1 = wall, 2 = interior, 3 = outer; the normals of the file are used.
//! * `point-input` (F3): no header, `id x y left right flag_1 flag_2 nbhs c...` (no min_dist).
//! * `sim` (our own, written by `sim mesh`): first line `# sim point cloud v1`, then `N`, then
//!   `x y left right flag_1 flag_2 nx ny min_dist nbhs c...`; comment lines start with `#`.
//!   The normals are stored for every point (the reader keeps them).
//!
//! flag_1: 0 = wall, 1 = interior, 2 = outer (except `old`). left/right: previous and next
//! point on the same boundary curve (0 = none).
//!
//! Files are untrusted input: only a regular file of at most [`MAX_CLOUD_BYTES`] is read, a
//! header count is checked against what the text can hold before anything is sized by it,
//! and messages quote at most [`crate::error::QUOTE_MAX`] characters of a value.

use std::iter::Peekable;
use std::path::Path;

use crate::error::{Result, SimError, input, quote, read_text_file};
use crate::solvers::lskum::cloud::{Cloud, Csr, INTERIOR, NONE, OUTER, WALL};

/// First line of a `sim` point-cloud file.
const SIM_SIGNATURE: &str = "# sim point cloud v1";

/// The largest point-cloud file read: 4 GiB, some 25 million points. It also keeps the
/// number of neighbour links (at most one per two bytes) within the u32 offsets of [`Csr`].
pub const MAX_CLOUD_BYTES: u64 = 4 << 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CloudFormat {
    /// F5: `x y left right flag_1 flag_2 min_dist nbhs conn...` (header optional).
    #[default]
    Legacy,
    /// F1 (2019): `local_id global_id x y nx ny flag_1(1/2/3) flag_2 nbhs conn...`.
    Old,
    /// F3: `id x y left right flag_1 flag_2 nbhs conn...`, no header.
    PointInput,
    /// `sim mesh` output, see the module documentation.
    Sim,
}

impl CloudFormat {
    pub fn name(self) -> &'static str {
        match self {
            CloudFormat::Legacy => "legacy",
            CloudFormat::Old => "old",
            CloudFormat::PointInput => "point-input",
            CloudFormat::Sim => "sim",
        }
    }

    /// The format stores a normal for every point.
    fn has_normals(self) -> bool {
        matches!(self, CloudFormat::Old | CloudFormat::Sim)
    }

    /// The format stores min_dist for every point.
    fn has_min_dist(self) -> bool {
        matches!(self, CloudFormat::Legacy | CloudFormat::Sim)
    }

    /// The file must start with the point count.
    fn needs_header(self) -> bool {
        matches!(self, CloudFormat::Old | CloudFormat::Sim)
    }

    /// The fewest values on a point line (those before the neighbours, and the count).
    fn min_values(self) -> usize {
        match self {
            CloudFormat::Legacy | CloudFormat::PointInput => 8,
            CloudFormat::Old => 9,
            CloudFormat::Sim => 10,
        }
    }
}

/// Read and validate a point cloud; every problem is an input error naming the file and
/// the line or point. Only a regular file of at most [`MAX_CLOUD_BYTES`] in UTF-8 is read.
pub fn load(path: &Path, format: CloudFormat) -> Result<Cloud> {
    let text = read_text_file(path, "point cloud", MAX_CLOUD_BYTES)?;
    parse(&text, &path.display().to_string(), format)
}

/// Parse cloud text (`origin` names the file in messages) and build the derived geometry.
pub fn parse(text: &str, origin: &str, format: CloudFormat) -> Result<Cloud> {
    // `sim mesh`'s files say what they are: read in another layout, they fail on the first point.
    let raw = parse_raw(text, origin, format).map_err(|e| match e {
        SimError::Input(m) if format != CloudFormat::Sim && text.starts_with(SIM_SIGNATURE) => {
            SimError::Input(format!("{m} (read as format: {}; the file is a sim point cloud: give format: sim)", format.name()))
        }
        e => e,
    })?;
    build(raw, origin)
}

// ---------------------------------------------------------------------------------------------
// Reading the text

/// What the raw reader produced before the derived geometry.
struct Raw {
    x: Vec<f64>,
    y: Vec<f64>,
    flag: Vec<u8>,
    shape: Vec<u32>,
    left: Vec<u32>,
    right: Vec<u32>,
    normals: Option<(Vec<f64>, Vec<f64>)>,
    min_dist: Option<Vec<f64>>,
    conn: Csr,
    /// Line number (1-based) of each point, for messages.
    line: Vec<usize>,
    /// Left and right guessed from the neighbour lists (F1): their order says nothing of the
    /// orientation, only the file's normals do.
    left_right_guessed: bool,
}

impl Raw {
    /// Empty storage for about `cap` points of `format`.
    fn with_capacity(format: CloudFormat, cap: usize) -> Self {
        Raw {
            x: Vec::with_capacity(cap),
            y: Vec::with_capacity(cap),
            flag: Vec::with_capacity(cap),
            shape: Vec::with_capacity(cap),
            left: Vec::with_capacity(cap),
            right: Vec::with_capacity(cap),
            normals: format.has_normals().then(|| (Vec::with_capacity(cap), Vec::with_capacity(cap))),
            min_dist: format.has_min_dist().then(|| Vec::with_capacity(cap)),
            conn: Csr { start: vec![0], idx: Vec::with_capacity(cap * 8) },
            line: Vec::with_capacity(cap),
            left_right_guessed: false,
        }
    }

    fn len(&self) -> usize {
        self.x.len()
    }

    /// Append the point of line `line`; its neighbours end at `links_end` of the raw links.
    fn push(&mut self, p: PointLine, line: usize, links_end: usize) {
        self.x.push(p.x);
        self.y.push(p.y);
        self.flag.push(p.flag as u8);
        self.shape.push(p.shape as u32);
        // left/right are not negative here; larger values than a point number fail the
        // range check of `resolve_links`
        self.left.push(p.left.clamp(-1, u32::MAX as i64 - 1) as u32);
        self.right.push(p.right.clamp(-1, u32::MAX as i64 - 1) as u32);
        if let (Some((nx, ny)), Some((a, b))) = (self.normals.as_mut(), p.normal) {
            nx.push(a);
            ny.push(b);
        }
        if let (Some(md), Some(d)) = (self.min_dist.as_mut(), p.min_dist) {
            md.push(d);
        }
        self.conn.start.push(links_end as u32);
        self.line.push(line);
    }
}

/// The values of one point line, checked as far as the line alone allows.
struct PointLine {
    x: f64,
    y: f64,
    /// 1-based, 0 = none.
    left: i64,
    right: i64,
    /// flag_1 in 0 (wall), 1 (interior), 2 (outer).
    flag: i64,
    /// flag_2.
    shape: i64,
    /// Where the format has them.
    normal: Option<(f64, f64)>,
    min_dist: Option<f64>,
}

/// The values of one line, in order, with messages naming the file and line.
struct Tokens<'a> {
    file: &'a str,
    line: usize,
    it: std::str::SplitAsciiWhitespace<'a>,
}

impl<'a> Tokens<'a> {
    /// An input error about this line.
    fn fail<T>(&self, msg: String) -> Result<T> {
        input(format!("{}:{}: {msg}", self.file, self.line))
    }
    fn next(&mut self, what: &str) -> Result<&'a str> {
        match self.it.next() {
            Some(t) => Ok(t),
            None => self.fail(format!("line ends before {what}")),
        }
    }
    fn f64(&mut self, what: &str) -> Result<f64> {
        let t = self.next(what)?;
        // Fortran exponent letters
        let v: std::result::Result<f64, _> =
            if t.contains(['d', 'D']) { t.replace(['d', 'D'], "e").parse() } else { t.parse() };
        match v {
            Ok(v) if v.is_finite() => Ok(v),
            Ok(v) => self.fail(format!("{what} is {v}, not a finite number")),
            Err(_) => self.fail(format!("{what} {} is not a number", quote(t))),
        }
    }
    fn int(&mut self, what: &str) -> Result<i64> {
        let t = self.next(what)?;
        match t.parse::<i64>() {
            Ok(v) => Ok(v),
            Err(_) => self.fail(format!("{what} {} is not an integer", quote(t))),
        }
    }
    /// A point number that must be `expected` (the files number their points in order).
    fn point_number(&mut self, what: &str, expected: usize) -> Result<()> {
        let id = self.int(what)?;
        if id != expected as i64 {
            return self.fail(format!("{what} is {id}, expected {expected} (points must be numbered in order)"));
        }
        Ok(())
    }
    fn end(&mut self) -> Result<()> {
        match self.it.next() {
            None => Ok(()),
            Some(t) => self.fail(format!("unexpected extra value {} at the end of the line", quote(t))),
        }
    }
}

fn parse_raw(text: &str, file: &str, format: CloudFormat) -> Result<Raw> {
    let mut lines = data_lines(text).peekable();
    if format == CloudFormat::Sim && !text.starts_with(SIM_SIGNATURE) {
        return input(format!("{file}:1: not a sim point cloud (first line must be '{SIM_SIGNATURE}')"));
    }
    let declared = read_header(&mut lines, file, format, text.len())?;
    if format.needs_header() && declared.is_none() {
        return input(format!("{file}:1: missing header line with the point count"));
    }
    // `read_header` bounds the count by the length of the text
    let cap = declared.unwrap_or(0);
    let mut r = Raw::with_capacity(format, cap);
    // Neighbour numbers as written (1-based, unchecked); point i has those from
    // r.conn.start[i] to r.conn.start[i + 1].
    let mut raw_links: Vec<i64> = Vec::with_capacity(cap.saturating_mul(8));
    for (ln, l) in lines {
        let number = r.len() + 1;
        if let Some(d) = declared
            && number > d
        {
            return input(format!("{file}:{ln}: more point lines than the {d} declared in the header"));
        }
        let mut t = Tokens { file, line: ln, it: l.split_ascii_whitespace() };
        let p = read_point_line(&mut t, format, number, &mut raw_links)?;
        if raw_links.len() >= u32::MAX as usize {
            return input(format!("{file}:{ln}: more neighbour links than supported"));
        }
        r.push(p, ln, raw_links.len());
    }
    check_point_count(r.len(), declared, file)?;
    resolve_links(&mut r, &raw_links, file)?;
    if format == CloudFormat::Old {
        surface_left_right_from_links(&mut r);
        r.left_right_guessed = true;
    }
    Ok(r)
}

/// Non-empty, non-comment lines with their 1-based numbers.
fn data_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(k, l)| (k + 1, l))
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
}

/// The point count of the header, a first line with a single integer (taken from `lines`),
/// or None when the first line is a point line. The count is checked against what a text of
/// `len` bytes can hold: a point line of `format` has at least `min_values` values, each
/// followed by a space or a line end.
fn read_header<'a>(
    lines: &mut Peekable<impl Iterator<Item = (usize, &'a str)>>,
    file: &str,
    format: CloudFormat,
    len: usize,
) -> Result<Option<usize>> {
    let Some(&(ln, l)) = lines.peek() else {
        return input(format!("{file}: no points in the file"));
    };
    let mut t = l.split_ascii_whitespace();
    let Some(first) = t.next() else {
        return input(format!("{file}:{ln}: expected the point count or a point line"));
    };
    if t.next().is_some() {
        return Ok(None);
    }
    let n = match first.parse::<usize>() {
        Ok(n) => n,
        Err(e) if matches!(e.kind(), std::num::IntErrorKind::PosOverflow) => {
            return input(format!("{file}:{ln}: point count {} is out of range", quote(first)));
        }
        Err(_) => return input(format!("{file}:{ln}: expected the point count or a point line")),
    };
    lines.next();
    let most = len / (2 * format.min_values());
    if n > most {
        return input(format!(
            "{file}:{ln}: the header declares {n} points, but {len} bytes of text hold at most {most} point lines \
             of the {} format (truncated file or wrong count)",
            format.name()
        ));
    }
    Ok(Some(n))
}

/// Read point `number` from its line `t`, appending its neighbour numbers to `raw_links`.
fn read_point_line(t: &mut Tokens, format: CloudFormat, number: usize, raw_links: &mut Vec<i64>) -> Result<PointLine> {
    let p = match format {
        CloudFormat::Old => read_old_fields(t, number)?,
        CloudFormat::Legacy | CloudFormat::Sim | CloudFormat::PointInput => read_fields(t, format, number)?,
    };
    if !(0..=2).contains(&p.flag) {
        return t.fail(format!("flag_1 {} is not 0 (wall), 1 (interior) or 2 (outer)", p.flag));
    }
    if p.shape < 0 || p.shape > u32::MAX as i64 {
        return t.fail(format!("flag_2 {} is not a shape number", p.shape));
    }
    read_neighbours(t, raw_links)?;
    t.end()?;
    if p.left < 0 || p.right < 0 {
        return t.fail(format!("left/right {} {} must be 0 (none) or a point number", p.left, p.right));
    }
    Ok(p)
}

/// The fields before the neighbour count in the legacy, sim and point-input formats.
fn read_fields(t: &mut Tokens, format: CloudFormat, number: usize) -> Result<PointLine> {
    if format == CloudFormat::PointInput {
        t.point_number("id", number)?;
    }
    let x = t.f64("x")?;
    let y = t.f64("y")?;
    let left = t.int("left")?;
    let right = t.int("right")?;
    let flag = t.int("flag_1")?;
    let shape = t.int("flag_2")?;
    let normal = if format.has_normals() { Some((t.f64("nx")?, t.f64("ny")?)) } else { None };
    let min_dist = if format.has_min_dist() { Some(t.f64("min_dist")?) } else { None };
    Ok(PointLine { x, y, left, right, flag, shape, normal, min_dist })
}

/// The fields before the neighbour count in the old format (flag_1 1..3 mapped to 0..2; no
/// left/right).
fn read_old_fields(t: &mut Tokens, number: usize) -> Result<PointLine> {
    t.point_number("local_id", number)?;
    let _global = t.int("global_id")?;
    let x = t.f64("x")?;
    let y = t.f64("y")?;
    let nx = t.f64("nx")?;
    let ny = t.f64("ny")?;
    let f = t.int("flag_1")?;
    let flag = match f {
        1..=3 => f - 1,
        _ => return t.fail(format!("flag_1 {f} is not 1 (wall), 2 (interior) or 3 (outer)")),
    };
    let shape = t.int("flag_2")?;
    Ok(PointLine { x, y, left: 0, right: 0, flag, shape, normal: Some((nx, ny)), min_dist: None })
}

/// The neighbour count and that many neighbour numbers.
fn read_neighbours(t: &mut Tokens, raw_links: &mut Vec<i64>) -> Result<()> {
    let nbhs = t.int("nbhs")?;
    if !(0..=10_000).contains(&nbhs) {
        return t.fail(format!("neighbour count {nbhs} is out of range"));
    }
    for k in 0..nbhs {
        raw_links.push(t.int(&format!("neighbour {} of {nbhs}", k + 1))?);
    }
    Ok(())
}

/// `n` points read: at least one, as many as the header declares, fewer than u32::MAX.
fn check_point_count(n: usize, declared: Option<usize>, file: &str) -> Result<()> {
    if n == 0 {
        return input(format!("{file}: no points in the file"));
    }
    if let Some(d) = declared
        && n < d
    {
        return input(format!("{file}: truncated: the header declares {d} points, the file has {n}"));
    }
    if n >= u32::MAX as usize {
        return input(format!("{file}: {n} points is more than supported"));
    }
    Ok(())
}

/// Check the neighbour numbers (in range, no self-links) and left/right (in range) and make
/// them 0-based: the neighbours into `r.conn.idx`, absent left/right to [`NONE`].
fn resolve_links(r: &mut Raw, raw_links: &[i64], file: &str) -> Result<()> {
    let n = r.len();
    r.conn.idx = Vec::with_capacity(raw_links.len());
    for i in 0..n {
        let (a, b) = (r.conn.start[i] as usize, r.conn.start[i + 1] as usize);
        for &c in &raw_links[a..b] {
            if c < 1 || c > n as i64 {
                return input(format!(
                    "{file}:{}: point {}: neighbour index {c} is out of range 1..{n}",
                    r.line[i],
                    i + 1
                ));
            }
            if c as usize == i + 1 {
                return input(format!("{file}:{}: point {} lists itself as a neighbour", r.line[i], i + 1));
            }
            r.conn.idx.push((c - 1) as u32);
        }
        for (v, what) in [(r.left[i], "left"), (r.right[i], "right")] {
            if v as usize > n {
                return input(format!("{file}:{}: point {}: {what} index {v} is out of range 0..{n}", r.line[i], i + 1));
            }
        }
    }
    for v in r.left.iter_mut().chain(r.right.iter_mut()) {
        *v = if *v == 0 { NONE } else { *v - 1 };
    }
    Ok(())
}

/// F1 has no left/right (they only serve the force integration here, the normals are in the
/// file): surface points list their two surface neighbours first.
fn surface_left_right_from_links(r: &mut Raw) {
    for i in 0..r.len() {
        if r.shape[i] > 0 {
            let c = r.conn.of(i);
            if c.len() >= 2 {
                r.left[i] = c[0];
                r.right[i] = c[1];
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Validation and derived geometry

/// Check the points read, derive what the file does not hold (normals, min_dist) and the
/// split stencils, and check those.
fn build(mut r: Raw, file: &str) -> Result<Cloud> {
    let line = std::mem::take(&mut r.line);
    let at = |i: usize| format!("{file}:{}: point {}", line[i], i + 1);
    check_distinct_points(&r.x, &r.y, &at)?;
    check_links_present(&r, &at)?;
    check_boundary_links(&r.flag, &r.shape, &r.left, &r.right, &at)?;
    // A stored normal is compared with its left/right one where the file gives both.
    let compare = r.normals.is_some() && !r.left_right_guessed;
    let (nx, ny) = match r.normals.take() {
        Some(normals) => normals,
        None => normals_from_left_right(&r, &at)?,
    };
    check_unit_normals(&nx, &ny, &at)?;
    let links = compare.then_some((&r.left[..], &r.right[..]));
    check_normal_sides(&r.x, &r.y, &r.flag, &r.shape, links, (&nx, &ny), &r.conn, &at)?;
    let min_dist = match r.min_dist.take() {
        Some(v) => v,
        None => nearest_neighbour_distances(&r),
    };
    check_min_dist(&min_dist, &at)?;
    let mut c = Cloud {
        x: r.x,
        y: r.y,
        flag: r.flag,
        shape: r.shape,
        left: r.left,
        right: r.right,
        nx,
        ny,
        min_dist,
        conn: r.conn,
        ..Default::default()
    };
    c.build_stencils();
    c.check_stencils(&at)?;
    Ok(c)
}

/// No two points with identical coordinates (the message names the later one).
fn check_distinct_points(x: &[f64], y: &[f64], at: &dyn Fn(usize) -> String) -> Result<()> {
    let mut order: Vec<u32> = (0..x.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| (x[a as usize], y[a as usize]).partial_cmp(&(x[b as usize], y[b as usize])).unwrap());
    for w in order.windows(2) {
        let (a, b) = (w[0] as usize, w[1] as usize);
        if x[a] == x[b] && y[a] == y[b] {
            let (a, b) = (a.min(b), a.max(b));
            return input(format!("{}: same coordinates ({}, {}) as point {} (duplicate point)", at(b), x[b], y[b], a + 1));
        }
    }
    Ok(())
}

/// The checks of a file's cloud that a cloud stored elsewhere (a checkpoint, whose arrays
/// hold the normals and min_dist) must pass as well: distinct points, neighbours other than
/// the point itself, unit normals, positive min_dist.
pub fn check_stored(c: &Cloud, at: &dyn Fn(usize) -> String) -> Result<()> {
    check_distinct_points(&c.x, &c.y, at)?;
    for i in 0..c.x.len() {
        let links = c.conn.of(i);
        if links.is_empty() {
            return input(format!("{}: no neighbours", at(i)));
        }
        if links.contains(&(i as u32)) {
            return input(format!("{}: lists itself as a neighbour", at(i)));
        }
    }
    check_boundary_links(&c.flag, &c.shape, &c.left, &c.right, at)?;
    check_unit_normals(&c.nx, &c.ny, at)?;
    // (Stored normals were compared with their left/right ones when the file was read.)
    check_normal_sides(&c.x, &c.y, &c.flag, &c.shape, None, (&c.nx, &c.ny), &c.conn, at)?;
    check_min_dist(&c.min_dist, at)
}

/// Boundary points need left and right (unless the file holds the normals); every point
/// needs neighbours.
fn check_links_present(r: &Raw, at: &dyn Fn(usize) -> String) -> Result<()> {
    for i in 0..r.len() {
        if r.flag[i] != INTERIOR && (r.left[i] == NONE || r.right[i] == NONE) && r.normals.is_none() {
            return input(format!("{}: wall/outer point without left/right boundary neighbours", at(i)));
        }
        if r.conn.of(i).is_empty() {
            return input(format!("{}: no neighbours", at(i)));
        }
    }
    Ok(())
}

/// The left/right links of a wall or outer point lead to other points of its boundary: an
/// outer point's to outer points, a wall point's to points of its body (the same flag_2),
/// wall points or a point flagged interior on the body (the reference clouds' trailing edge).
/// Normals and forces are taken from these links.
fn check_boundary_links(flag: &[u8], shape: &[u32], left: &[u32], right: &[u32], at: &dyn Fn(usize) -> String) -> Result<()> {
    for i in 0..flag.len() {
        if flag[i] == INTERIOR {
            continue;
        }
        for (k, what) in [(left[i], "left"), (right[i], "right")] {
            if k == NONE {
                continue;
            }
            let k = k as usize;
            if k == i {
                return input(format!("{}: is its own {what} boundary neighbour", at(i)));
            }
            let (ok, kind) = if flag[i] == OUTER {
                (flag[k] == OUTER, "an outer point")
            } else {
                let on_body = flag[k] == WALL || (flag[k] == INTERIOR && shape[k] > 0);
                (on_body && shape[k] == shape[i], "a point of the same wall (flag_2)")
            };
            if !ok {
                let name = ["a wall", "an interior", "an outer"][flag[k] as usize];
                return input(format!(
                    "{}: its {what} boundary neighbour, point {} ({name} point, flag_2 {}), is not {kind}",
                    at(i),
                    k + 1,
                    shape[k]
                ));
            }
        }
    }
    Ok(())
}

/// Normals of the boundary points from their left and right neighbours ((0, 1) inside).
fn normals_from_left_right(r: &Raw, at: &dyn Fn(usize) -> String) -> Result<(Vec<f64>, Vec<f64>)> {
    let n = r.len();
    let mut nx = vec![0.0; n];
    let mut ny = vec![1.0; n];
    for i in 0..n {
        if r.flag[i] != INTERIOR {
            match two_sided_normal(&r.x, &r.y, r.left[i] as usize, r.right[i] as usize) {
                Some(n) => (nx[i], ny[i]) = n,
                None => return input(format!("{}: left and right boundary neighbours coincide; no normal", at(i))),
            }
        }
    }
    Ok((nx, ny))
}

fn check_unit_normals(nx: &[f64], ny: &[f64], at: &dyn Fn(usize) -> String) -> Result<()> {
    for i in 0..nx.len() {
        let m = (nx[i] * nx[i] + ny[i] * ny[i]).sqrt();
        if !(m.is_finite() && (m - 1.0).abs() < 1e-3) {
            return input(format!("{}: normal ({}, {}) is not a unit vector", at(i), nx[i], ny[i]));
        }
    }
    Ok(())
}

/// The normals face the fluid (spec §1.5): a wall point's neighbours lie on the fluid side of
/// its normal, an outer point's inside the domain. A boundary traversed the other way round,
/// or normals flipped, silently break both boundary conditions. Refused: a normal more than
/// 60° from the one its `left` and `right` neighbours give, where given (a stored normal
/// flipped or wrong), and a boundary (the walls of one body, the far field) most of whose
/// points have their neighbours behind them (the sum of their directions' cosines with the
/// normal of the wrong sign). Single points may: beside a thin trailing edge a coarse cloud's
/// wall stencil reaches across the body.
#[allow(clippy::too_many_arguments)]
fn check_normal_sides(
    x: &[f64],
    y: &[f64],
    flag: &[u8],
    shape: &[u32],
    left_right: Option<(&[u32], &[u32])>,
    (nx, ny): (&[f64], &[f64]),
    conn: &Csr,
    at: &dyn Fn(usize) -> String,
) -> Result<()> {
    let boundary = || (0..x.len()).filter(|&i| flag[i] != INTERIOR);
    if let Some((left, right)) = left_right {
        for i in boundary().filter(|&i| left[i] != NONE && right[i] != NONE) {
            if let Some((cx, cy)) = two_sided_normal(x, y, left[i] as usize, right[i] as usize)
                && nx[i] * cx + ny[i] * cy < 0.5
            {
                return input(format!(
                    "{}: normal ({}, {}) is more than 60° from ({cx:.6}, {cy:.6}), the one its left and right \
                     boundary neighbours give: flipped or not this point's",
                    at(i),
                    nx[i],
                    ny[i]
                ));
            }
        }
    }
    // (flag, shape) -> (points, points whose neighbours lie behind, the first of those)
    let mut sides: std::collections::BTreeMap<(u8, u32), (usize, usize, usize)> = Default::default();
    for i in boundary() {
        // Directions, not offsets: near a wall of fine first spacing the neighbours along the
        // convex surface lie much further away (a little behind) than those just above it.
        let along: f64 = conn
            .of(i)
            .iter()
            .map(|&k| {
                let (dx, dy) = (x[k as usize] - x[i], y[k as usize] - y[i]);
                (dx * nx[i] + dy * ny[i]) / (dx * dx + dy * dy).sqrt()
            })
            .sum();
        let behind = if flag[i] == WALL { !(along > 0.0) } else { !(along < 0.0) };
        let key = (flag[i], if flag[i] == WALL { shape[i] } else { 0 });
        let e = sides.entry(key).or_insert((0, 0, i));
        e.0 += 1;
        if behind {
            if e.1 == 0 {
                e.2 = i;
            }
            e.1 += 1;
        }
    }
    match sides.into_iter().find(|(_, (n, behind, _))| 2 * behind > *n) {
        Some(((f, shape), (n, behind, first))) => {
            let what = if f == WALL { format!("wall points of body {shape} (flag_2)") } else { "outer points".into() };
            input(format!(
                "{}: {behind} of the {n} {what} have their neighbours behind their normals (spec: on the side of the \
                 fluid): the boundary runs the wrong way round (walls and the far field are traversed clockwise, \
                 giving normals out of the body and out of the domain), or its normals are flipped",
                at(first)
            ))
        }
        None => Ok(()),
    }
}

/// The normal of a boundary point from its left and right neighbours `l`, `r` (spec §1.3);
/// None where they coincide.
pub(crate) fn two_sided_normal(x: &[f64], y: &[f64], l: usize, r: usize) -> Option<(f64, f64)> {
    let a = 0.5 * (y[r] - y[l]);
    let b = 0.5 * (x[r] - x[l]);
    let norm = (a * a + b * b).sqrt();
    (norm > 0.0).then(|| (-a / norm, b / norm))
}

/// min_dist where the file has none: the distance to the nearest neighbour.
fn nearest_neighbour_distances(r: &Raw) -> Vec<f64> {
    (0..r.len())
        .map(|i| {
            r.conn
                .of(i)
                .iter()
                .map(|&k| {
                    let (dx, dy) = (r.x[k as usize] - r.x[i], r.y[k as usize] - r.y[i]);
                    (dx * dx + dy * dy).sqrt()
                })
                .fold(f64::INFINITY, f64::min)
        })
        .collect()
}

fn check_min_dist(min_dist: &[f64], at: &dyn Fn(usize) -> String) -> Result<()> {
    for (i, &d) in min_dist.iter().enumerate() {
        if !(d > 0.0 && d.is_finite()) {
            return input(format!("{}: min_dist {d} must be positive", at(i)));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Writing

impl Cloud {
    /// Write the cloud in the legacy solver format (F5, with header; min_dist in full precision).
    pub fn write_legacy(&self, path: &Path) -> Result<()> {
        self.write_text(path, &[], false)
    }

    /// Write the cloud in the `sim` text format.
    pub fn write_sim(&self, path: &Path) -> Result<()> {
        let header = [
            SIM_SIGNATURE,
            "# x y left right flag_1(0 wall, 1 interior, 2 outer) flag_2 nx ny min_dist nbhs conn... (1-based)",
        ];
        self.write_text(path, &header, true)
    }

    /// One line per point: `x y left right flag_1 flag_2 [nx ny] min_dist nbhs conn...`
    /// (1-based indices), after the `header` lines and the point count.
    fn write_text(&self, path: &Path, header: &[&str], normals: bool) -> Result<()> {
        use std::fmt::Write as _;
        let mut s = String::with_capacity(self.len() * 120);
        for line in header {
            let _ = writeln!(s, "{line}");
        }
        let _ = writeln!(s, "{}", self.len());
        let one = |v: u32| if v == NONE { 0 } else { v as u64 + 1 };
        for i in 0..self.len() {
            let _ = write!(
                s,
                "{:?} {:?} {} {} {} {}",
                self.x[i],
                self.y[i],
                one(self.left[i]),
                one(self.right[i]),
                self.flag[i],
                self.shape[i]
            );
            if normals {
                let _ = write!(s, " {:?} {:?} {:?}", self.nx[i], self.ny[i], self.min_dist[i]);
            } else {
                let _ = write!(s, " {:.17e}", self.min_dist[i]);
            }
            let _ = write!(s, " {}", self.conn.of(i).len());
            for &k in self.conn.of(i) {
                let _ = write!(s, " {}", k + 1);
            }
            s.push('\n');
        }
        crate::io::write_atomic(path, s.as_bytes())
    }
}
