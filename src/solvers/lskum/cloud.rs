//! Point clouds: storage (structure of arrays, neighbour lists in CSR form), the text readers
//! for the reference formats, validation, normals and the four split stencils.
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

use std::path::Path;

use crate::error::{Result, SimError};

use super::kernels::LsSums;

pub const WALL: u8 = 0;
pub const INTERIOR: u8 = 1;
pub const OUTER: u8 = 2;

/// Sentinel for "no left/right neighbour".
pub const NONE: u32 = u32::MAX;

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
}

/// Compressed neighbour lists: the neighbours of point i are `idx[start[i]..start[i+1]]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Csr {
    pub start: Vec<u32>,
    pub idx: Vec<u32>,
}

impl Csr {
    #[inline]
    pub fn of(&self, i: usize) -> &[u32] {
        &self.idx[self.start[i] as usize..self.start[i + 1] as usize]
    }
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A point cloud with its derived geometry.
#[derive(Clone, Debug, Default)]
pub struct Cloud {
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    pub flag: Vec<u8>,
    pub shape: Vec<u32>,
    /// 0-based, [`NONE`] when absent.
    pub left: Vec<u32>,
    pub right: Vec<u32>,
    pub nx: Vec<f64>,
    pub ny: Vec<f64>,
    pub min_dist: Vec<f64>,
    pub conn: Csr,
    pub xpos: Csr,
    pub xneg: Csr,
    pub ypos: Csr,
    pub yneg: Csr,
}

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
}

fn err<T>(msg: String) -> Result<T> {
    Err(SimError::Input(msg))
}

struct Tokens<'a> {
    file: &'a str,
    line: usize,
    it: std::str::SplitAsciiWhitespace<'a>,
}

impl<'a> Tokens<'a> {
    fn next(&mut self, what: &str) -> Result<&'a str> {
        match self.it.next() {
            Some(t) => Ok(t),
            None => err(format!("{}:{}: line ends before {what}", self.file, self.line)),
        }
    }
    fn f64(&mut self, what: &str) -> Result<f64> {
        let t = self.next(what)?;
        // Fortran exponent letters
        let v: std::result::Result<f64, _> =
            if t.contains(['d', 'D']) { t.replace(['d', 'D'], "e").parse() } else { t.parse() };
        match v {
            Ok(v) if v.is_finite() => Ok(v),
            Ok(v) => err(format!("{}:{}: {what} is {v}, not a finite number", self.file, self.line)),
            Err(_) => err(format!("{}:{}: {what} {t:?} is not a number", self.file, self.line)),
        }
    }
    fn int(&mut self, what: &str) -> Result<i64> {
        let t = self.next(what)?;
        match t.parse::<i64>() {
            Ok(v) => Ok(v),
            Err(_) => err(format!("{}:{}: {what} {t:?} is not an integer", self.file, self.line)),
        }
    }
    fn end(&mut self) -> Result<()> {
        match self.it.next() {
            None => Ok(()),
            Some(t) => err(format!("{}:{}: unexpected extra value {t:?} at the end of the line", self.file, self.line)),
        }
    }
}

/// Read and validate a point cloud; every problem is an input error naming the file and
/// the line or point.
pub fn load(path: &Path, format: CloudFormat) -> Result<Cloud> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| SimError::Input(format!("cannot read point cloud {}: {e}", path.display())))?;
    parse(&text, &path.display().to_string(), format)
}

/// Parse cloud text (`origin` names the file in messages) and build the derived geometry.
pub fn parse(text: &str, origin: &str, format: CloudFormat) -> Result<Cloud> {
    let raw = parse_raw(text, origin, format)?;
    build(raw, origin)
}

fn parse_raw(text: &str, file: &str, format: CloudFormat) -> Result<Raw> {
    // Non-empty, non-comment lines with their 1-based numbers.
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(k, l)| (k + 1, l))
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .peekable();
    if format == CloudFormat::Sim && !text.starts_with("# sim point cloud v1") {
        return err(format!("{file}:1: not a sim point cloud (first line must be '# sim point cloud v1')"));
    }
    // Header: a first line with a single integer.
    let mut declared: Option<usize> = None;
    if let Some(&(ln, l)) = lines.peek() {
        let mut t = l.split_ascii_whitespace();
        let first = t.next();
        if t.next().is_none() {
            match first.map(str::parse::<usize>) {
                Some(Ok(n)) => {
                    declared = Some(n);
                    lines.next();
                }
                _ => return err(format!("{file}:{ln}: expected the point count or a point line")),
            }
        }
    } else {
        return err(format!("{file}: no points in the file"));
    }
    if matches!(format, CloudFormat::Old | CloudFormat::Sim) && declared.is_none() {
        return err(format!("{file}:1: missing header line with the point count"));
    }
    let cap = declared.unwrap_or(0);
    let mut r = Raw {
        x: Vec::with_capacity(cap),
        y: Vec::with_capacity(cap),
        flag: Vec::with_capacity(cap),
        shape: Vec::with_capacity(cap),
        left: Vec::with_capacity(cap),
        right: Vec::with_capacity(cap),
        normals: matches!(format, CloudFormat::Old | CloudFormat::Sim)
            .then(|| (Vec::with_capacity(cap), Vec::with_capacity(cap))),
        min_dist: matches!(format, CloudFormat::Legacy | CloudFormat::Sim).then(|| Vec::with_capacity(cap)),
        conn: Csr { start: vec![0], idx: Vec::with_capacity(cap * 8) },
        line: Vec::with_capacity(cap),
    };
    let mut raw_links: Vec<i64> = Vec::with_capacity(cap * 8);
    for (ln, l) in lines {
        let n = r.x.len() + 1;
        if let Some(d) = declared
            && n > d
        {
            return err(format!("{file}:{ln}: more point lines than the {d} declared in the header"));
        }
        let mut t = Tokens { file, line: ln, it: l.split_ascii_whitespace() };
        let id_check = |t: &mut Tokens, what: &str| -> Result<()> {
            let id = t.int(what)?;
            if id != n as i64 {
                return err(format!("{file}:{ln}: {what} is {id}, expected {n} (points must be numbered in order)"));
            }
            Ok(())
        };
        let (x, y, left, right, flag1, flag2);
        match format {
            CloudFormat::Legacy | CloudFormat::Sim | CloudFormat::PointInput => {
                if matches!(format, CloudFormat::PointInput) {
                    id_check(&mut t, "id")?;
                }
                x = t.f64("x")?;
                y = t.f64("y")?;
                left = t.int("left")?;
                right = t.int("right")?;
                flag1 = t.int("flag_1")?;
                flag2 = t.int("flag_2")?;
                // sim: normals; legacy and sim: min_dist (None where the format has none).
                if let Some((nxv, nyv)) = r.normals.as_mut() {
                    nxv.push(t.f64("nx")?);
                    nyv.push(t.f64("ny")?);
                }
                if let Some(md) = r.min_dist.as_mut() {
                    md.push(t.f64("min_dist")?);
                }
            }
            CloudFormat::Old => {
                id_check(&mut t, "local_id")?;
                let _global = t.int("global_id")?;
                x = t.f64("x")?;
                y = t.f64("y")?;
                let (nxv, nyv) = r.normals.as_mut().unwrap();
                nxv.push(t.f64("nx")?);
                nyv.push(t.f64("ny")?);
                let f = t.int("flag_1")?;
                flag1 = match f {
                    1..=3 => f - 1,
                    _ => return err(format!("{file}:{ln}: flag_1 {f} is not 1 (wall), 2 (interior) or 3 (outer)")),
                };
                flag2 = t.int("flag_2")?;
                left = 0;
                right = 0;
            }
        }
        if !(0..=2).contains(&flag1) {
            return err(format!("{file}:{ln}: flag_1 {flag1} is not 0 (wall), 1 (interior) or 2 (outer)"));
        }
        if flag2 < 0 || flag2 > u32::MAX as i64 {
            return err(format!("{file}:{ln}: flag_2 {flag2} is not a shape number"));
        }
        let nbhs = t.int("nbhs")?;
        if !(0..=10_000).contains(&nbhs) {
            return err(format!("{file}:{ln}: neighbour count {nbhs} is out of range"));
        }
        for k in 0..nbhs {
            raw_links.push(t.int(&format!("neighbour {} of {nbhs}", k + 1))?);
        }
        t.end()?;
        r.x.push(x);
        r.y.push(y);
        r.flag.push(flag1 as u8);
        r.shape.push(flag2 as u32);
        r.left.push(left.clamp(-1, u32::MAX as i64 - 1) as u32); // checked below
        r.right.push(right.clamp(-1, u32::MAX as i64 - 1) as u32);
        // keep the raw values for the range check
        r.conn.start.push(raw_links.len() as u32);
        r.line.push(ln);
        // stash signed left/right in the range check below
        if left < 0 || right < 0 {
            return err(format!("{file}:{ln}: left/right {left} {right} must be 0 (none) or a point number"));
        }
    }
    let n = r.x.len();
    if n == 0 {
        return err(format!("{file}: no points in the file"));
    }
    if let Some(d) = declared
        && n < d
    {
        return err(format!("{file}: truncated: the header declares {d} points, the file has {n}"));
    }
    if n >= u32::MAX as usize {
        return err(format!("{file}: {n} points is more than supported"));
    }
    // Neighbour indices: in range, no self-links; 1-based -> 0-based.
    r.conn.idx = Vec::with_capacity(raw_links.len());
    for i in 0..n {
        let (a, b) = (r.conn.start[i] as usize, r.conn.start[i + 1] as usize);
        for &c in &raw_links[a..b] {
            if c < 1 || c > n as i64 {
                return err(format!(
                    "{file}:{}: point {}: neighbour index {c} is out of range 1..{n}",
                    r.line[i],
                    i + 1
                ));
            }
            if c as usize == i + 1 {
                return err(format!("{file}:{}: point {} lists itself as a neighbour", r.line[i], i + 1));
            }
            r.conn.idx.push((c - 1) as u32);
        }
        for (v, what) in [(r.left[i], "left"), (r.right[i], "right")] {
            if v as usize > n {
                return err(format!("{file}:{}: point {}: {what} index {v} is out of range 0..{n}", r.line[i], i + 1));
            }
        }
    }
    for v in r.left.iter_mut().chain(r.right.iter_mut()) {
        *v = if *v == 0 { NONE } else { *v - 1 };
    }
    if format == CloudFormat::Old {
        // F1 has no left/right (they only serve the force integration here, the normals are
        // in the file): surface points list their two surface neighbours first.
        for i in 0..n {
            if r.shape[i] > 0 {
                let c = r.conn.of(i);
                if c.len() >= 2 {
                    r.left[i] = c[0];
                    r.right[i] = c[1];
                }
            }
        }
    }
    Ok(r)
}

fn build(r: Raw, file: &str) -> Result<Cloud> {
    let n = r.x.len();
    let at = |i: usize| format!("{file}:{}: point {}", r.line[i], i + 1);
    // Duplicate points (identical coordinates).
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        (r.x[a as usize], r.y[a as usize]).partial_cmp(&(r.x[b as usize], r.y[b as usize])).unwrap()
    });
    for w in order.windows(2) {
        let (a, b) = (w[0] as usize, w[1] as usize);
        if r.x[a] == r.x[b] && r.y[a] == r.y[b] {
            let (a, b) = (a.min(b), a.max(b));
            return err(format!(
                "{}: same coordinates ({}, {}) as point {} (duplicate point)",
                at(b),
                r.x[b],
                r.y[b],
                a + 1
            ));
        }
    }
    // Boundary points need left and right.
    for i in 0..n {
        if r.flag[i] != INTERIOR && (r.left[i] == NONE || r.right[i] == NONE) && r.normals.is_none() {
            return err(format!("{}: wall/outer point without left/right boundary neighbours", at(i)));
        }
        if r.conn.of(i).is_empty() {
            return err(format!("{}: no neighbours", at(i)));
        }
    }
    // Normals.
    let (nx, ny) = match r.normals {
        Some((nx, ny)) => (nx, ny),
        None => {
            let mut nx = vec![0.0; n];
            let mut ny = vec![1.0; n];
            for i in 0..n {
                if r.flag[i] != INTERIOR {
                    let (l, rr) = (r.left[i] as usize, r.right[i] as usize);
                    let a = 0.5 * (r.y[rr] - r.y[l]);
                    let b = 0.5 * (r.x[rr] - r.x[l]);
                    let norm = (a * a + b * b).sqrt();
                    if !(norm > 0.0) {
                        return err(format!("{}: left and right boundary neighbours coincide; no normal", at(i)));
                    }
                    nx[i] = -a / norm;
                    ny[i] = b / norm;
                }
            }
            (nx, ny)
        }
    };
    for i in 0..n {
        let m = (nx[i] * nx[i] + ny[i] * ny[i]).sqrt();
        if !(m.is_finite() && (m - 1.0).abs() < 1e-3) {
            return err(format!("{}: normal ({}, {}) is not a unit vector", at(i), nx[i], ny[i]));
        }
    }
    // min_dist: computed when absent.
    let min_dist = match r.min_dist {
        Some(v) => v,
        None => (0..n)
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
            .collect(),
    };
    for i in 0..n {
        if !(min_dist[i] > 0.0 && min_dist[i].is_finite()) {
            return err(format!("{}: min_dist {} must be positive", at(i), min_dist[i]));
        }
    }
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
    c.check_stencils(&|i| format!("{file}:{}: point {}", r.line[i], i + 1))?;
    Ok(c)
}

impl Cloud {
    pub fn len(&self) -> usize {
        self.x.len()
    }
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Split the neighbour lists into the x+, x-, y+, y- stencils (spec 3.1), keeping the
    /// order of `conn`.
    pub fn build_stencils(&mut self) {
        let n = self.len();
        let mut s: [Csr; 4] = Default::default();
        for c in s.iter_mut() {
            c.start = Vec::with_capacity(n + 1);
            c.start.push(0);
            c.idx = Vec::with_capacity(self.conn.idx.len() / 2 + n);
        }
        for i in 0..n {
            let (nx, ny) = (self.nx[i], self.ny[i]);
            for &k in self.conn.of(i) {
                let dx = self.x[k as usize] - self.x[i];
                let dy = self.y[k as usize] - self.y[i];
                let ds = dx * ny - dy * nx;
                let dn = dx * nx + dy * ny;
                if ds <= 0.0 {
                    s[0].idx.push(k);
                }
                if ds >= 0.0 {
                    s[1].idx.push(k);
                }
                match self.flag[i] {
                    INTERIOR => {
                        if dn <= 0.0 {
                            s[2].idx.push(k);
                        }
                        if dn >= 0.0 {
                            s[3].idx.push(k);
                        }
                    }
                    WALL => s[3].idx.push(k),
                    _ => s[2].idx.push(k),
                }
            }
            for c in s.iter_mut() {
                c.start.push(c.idx.len() as u32);
            }
        }
        let [a, b, c, d] = s;
        self.xpos = a;
        self.xneg = b;
        self.ypos = c;
        self.yneg = d;
    }

    /// Every stencil a point uses must be non-empty with a non-singular least-squares matrix
    /// (D > 1e-12 S_ss S_nn), and so must the full stencil in the global frame.
    pub fn check_stencils(&self, at: &dyn Fn(usize) -> String) -> Result<()> {
        for i in 0..self.len() {
            let (nx, ny) = (self.nx[i], self.ny[i]);
            let mut list: Vec<(&str, &Csr, bool)> = vec![("full", &self.conn, false)];
            list.push(("x+", &self.xpos, true));
            list.push(("x-", &self.xneg, true));
            if self.flag[i] != WALL {
                list.push(("y+", &self.ypos, true));
            }
            if self.flag[i] != OUTER {
                list.push(("y-", &self.yneg, true));
            }
            for (name, st, local) in list {
                let ks = st.of(i);
                if ks.is_empty() {
                    return err(format!("{}: the {name} split stencil is empty", at(i)));
                }
                let mut ls = LsSums::<0>::new();
                for &k in ks {
                    let dx = self.x[k as usize] - self.x[i];
                    let dy = self.y[k as usize] - self.y[i];
                    let (ds, dn) = if local { (dx * ny - dy * nx, dx * nx + dy * ny) } else { (dx, dy) };
                    ls.add(ds, dn, 1.0, &[]);
                }
                let d = ls.det();
                if !(d > 1e-12 * ls.sss * ls.snn) {
                    return err(format!(
                        "{}: the least-squares matrix of the {name} stencil ({} neighbours) is singular (det {d:e})",
                        at(i),
                        ks.len()
                    ));
                }
            }
        }
        Ok(())
    }

    /// Write the cloud in the legacy solver format (F5, with header; min_dist in full precision).
    pub fn write_legacy(&self, path: &Path) -> Result<()> {
        self.write_text(path, &[], false)
    }

    /// Write the cloud in the `sim` text format.
    pub fn write_sim(&self, path: &Path) -> Result<()> {
        let header = [
            "# sim point cloud v1",
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
