//! Arrays from an HDF5 or NetCDF-4 file (NetCDF-4 is HDF5): bathymetry and initial fields,
//! and their copies in a checkpoint.

use std::path::Path;

use crate::error::{Result, SimError, input};
use crate::real::Values;
use crate::solver::StateArray;

/// The 2-D dataset `name` of `path` as `(values row-major, [columns, rows])`, checked to have
/// one of the `shapes` (`[columns, rows]`) and only finite values; errors name `key`, the file
/// and the dataset.
pub fn read(key: &str, path: &Path, name: &str, shapes: &[[usize; 2]]) -> Result<(Vec<f64>, [usize; 2])> {
    let file = path.display();
    if !path.exists() {
        return input(format!("{key}: {file}: no such file"));
    }
    if !path.is_file() {
        return input(format!("{key}: {file}: not a regular file"));
    }
    let h5 = hdf5::File::open(path).map_err(|e| {
        // HDF5 locks a file it writes; a reader then fails the same way as on a file that is
        // not HDF5.
        let what = if e.to_string().contains("unable to lock file") {
            "locked by a program that has it open for writing; run again when it has closed the file"
        } else {
            "not a readable HDF5/NetCDF-4 file"
        };
        SimError::Input(format!("{key}: {file}: {what} ({e})"))
    })?;
    let ds = h5.dataset(name).map_err(|_| SimError::Input(format!("{key}: {file} has no dataset {name:?}")))?;
    if let Some(why) = unreadable_source(&ds, path) {
        return input(format!(
            "{key}: dataset {name:?} of {file} is a virtual dataset whose {why} (HDF5 would read its part as zeros)"
        ));
    }
    let shape = ds.shape();
    let wanted = shapes.iter().map(|[c, r]| format!("{r} x {c}")).collect::<Vec<_>>().join(" or ");
    let [rows, cols] = shape[..] else {
        return input(format!("{key}: dataset {name:?} of {file} has shape {shape:?}; needs {wanted} (rows x columns)"));
    };
    if !shapes.contains(&[cols, rows]) {
        return input(format!("{key}: dataset {name:?} of {file} is {rows} x {cols}; needs {wanted} (rows x columns)"));
    }
    // HDF5 converts enumerations (h5py's booleans among them) to numbers: a mask read as
    // depth 1 m. Only numbers are data.
    use hdf5::types::TypeDescriptor as Type;
    // (A type the crate cannot describe, such as float16, is left to the conversion below.)
    match ds.dtype().and_then(|t| t.to_descriptor()) {
        Ok(Type::Integer(_) | Type::Unsigned(_) | Type::Float(_)) | Err(_) => {}
        Ok(t) => return input(format!("{key}: dataset {name:?} of {file} holds {t} values, not numbers")),
    }
    let values: Vec<f64> = ds
        .read_raw::<f64>()
        .map_err(|e| SimError::Input(format!("{key}: cannot read dataset {name:?} of {file} as numbers ({e})")))?;
    // NetCDF marks missing data (land, gaps) with the variable's fill value, and `missing_value`
    // may list several; NetCDF-4 stores either as a one-element array or a scalar. Without the
    // attributes, NetCDF-4 still fills what was never written (masked cells too) with the
    // dataset's HDF5 fill value (9.97e36 for floats). A fill of zero is left alone: it is also
    // HDF5's default, and a transport of zero is data.
    let numeric = |attr: &str| -> Result<Option<Vec<f64>>> {
        let Ok(a) = ds.attr(attr) else { return Ok(None) };
        a.read_raw::<f64>().map(Some).map_err(|e| {
            SimError::Input(format!("{key}: attribute {attr} of dataset {name:?} of {file} is not numeric ({e})"))
        })
    };
    let mut marks = Vec::new();
    for attr in ["_FillValue", "missing_value"] {
        if let Some(m) = numeric(attr)? {
            marks.push((attr, m));
        }
    }
    if marks.is_empty() {
        use hdf5::plist::dataset_create::FillValue;
        let dcpl = ds.dcpl().ok().filter(|c| c.fill_value_defined() == FillValue::UserDefined);
        if let Some(fill) = dcpl.and_then(|c| c.fill_value_as::<f64>()).filter(|&f| f != 0.0) {
            marks.push(("fill value", vec![fill]));
        }
    }
    for (attr, marks) in &marks {
        if let Some((k, fill)) = values.iter().enumerate().find_map(|(k, v)| marks.iter().find(|&m| m == v).map(|m| (k, m))) {
            return input(format!(
                "{key}: dataset {name:?} of {file} holds its {attr} {fill:e} (missing data) at row {}, column {}",
                k / cols,
                k % cols
            ));
        }
    }
    // CF packing (integers for a compact file): the value is `stored * scale_factor +
    // add_offset`; the fill marks above are in the stored form.
    let packing = [numeric("scale_factor")?, numeric("add_offset")?];
    let mut values = values;
    if packing.iter().any(Option::is_some) {
        let [scale, offset] = [(&packing[0], 1.0), (&packing[1], 0.0)].map(|(a, none)| match a.as_deref() {
            None => Ok(none),
            Some(&[x]) if x.is_finite() => Ok(x),
            Some(x) => input(format!(
                "{key}: dataset {name:?} of {file} has a packing attribute (scale_factor, add_offset) of {x:?}; needs one finite number"
            )),
        });
        let (scale, offset) = (scale?, offset?);
        values.iter_mut().for_each(|v| *v = *v * scale + offset);
    }
    if let Some(k) = values.iter().position(|v| !v.is_finite()) {
        return input(format!(
            "{key}: dataset {name:?} of {file} holds {} at row {}, column {}",
            values[k],
            k / cols,
            k % cols
        ));
    }
    Ok((values, [cols, rows]))
}

/// Why a source of a virtual dataset would give no data: HDF5 reads a source it cannot find
/// or read (missing, locked, lacking the dataset) as the fill value, zeros, without an error.
/// The file is looked for where HDF5 looks: under `HDF5_VDS_PREFIX`, at the name as stored,
/// beside the virtual dataset's file, and by its last component there; "." is that file.
fn unreadable_source(ds: &hdf5::Dataset, path: &Path) -> Option<String> {
    if ds.layout() != hdf5::plist::dataset_create::Layout::Virtual {
        return None;
    }
    let beside = path.parent().unwrap_or(Path::new("."));
    let prefix = std::env::var_os("HDF5_VDS_PREFIX").map(std::path::PathBuf::from);
    virtual_sources(ds).into_iter().find_map(|(file, dataset)| {
        // The names are printf-like patterns, "%%" a literal "%".
        let (file, dataset) = (file.replace("%%", "%"), dataset.replace("%%", "%"));
        let name = Path::new(&file);
        let found = if file == "." {
            path.to_path_buf()
        } else {
            let mut candidates = [prefix.as_ref().map(|p| p.join(name)), Some(name.to_path_buf()), Some(beside.join(name))]
                .into_iter()
                .chain([name.file_name().map(|last| beside.join(last))])
                .flatten();
            match candidates.find(|c| c.is_file()) {
                Some(found) => found,
                None => return Some(format!("source file {file} does not exist")),
            }
        };
        match hdf5::File::open(&found) {
            Err(e) => Some(format!("source file {} cannot be read ({e})", found.display())),
            Ok(f) if f.dataset(&dataset).is_err() => Some(format!("source file {} has no dataset {dataset:?}", found.display())),
            Ok(_) => None,
        }
    })
}

/// The source file and dataset names of a virtual dataset. (The crate's `virtual_map` fails on
/// the selections h5py writes, so this asks the C library for the names alone.)
fn virtual_sources(ds: &hdf5::Dataset) -> Vec<(String, String)> {
    use hdf5_sys::h5p::{H5Pget_virtual_count, H5Pget_virtual_dsetname, H5Pget_virtual_filename};
    let Ok(dcpl) = ds.dcpl() else { return Vec::new() };
    let id = dcpl.id();
    // SAFETY: `id` is a live dataset creation property list; each name is read into a buffer
    // one longer than the length the first call reports (the terminating NUL).
    hdf5::sync::sync(|| unsafe {
        let mut count = 0;
        if H5Pget_virtual_count(id, &mut count) < 0 {
            return Vec::new();
        }
        let text = |get: unsafe extern "C" fn(i64, usize, *mut std::ffi::c_char, usize) -> isize, i| {
            let len = usize::try_from(get(id, i, std::ptr::null_mut(), 0)).ok()?;
            let mut buf = vec![0u8; len + 1];
            (get(id, i, buf.as_mut_ptr().cast(), buf.len()) >= 0).then_some(())?;
            buf.truncate(len);
            String::from_utf8(buf).ok()
        };
        (0..count).filter_map(|i| Some((text(H5Pget_virtual_filename, i)?, text(H5Pget_virtual_dsetname, i)?))).collect()
    })
}

/// The names under which a checkpoint's /fields hold the arrays a case read from its files
/// (`input_` and what the array is), as read (rows x columns, f64).
pub const STORED: [&str; 4] = ["input_bathymetry", "input_eta", "input_hu", "input_hv"];

/// Where a case's file arrays come from: its files, or on a restart the copies its checkpoint
/// holds, so that a restart needs neither the files nor that they are unchanged. Keeps what
/// it hands out, for the checkpoints.
pub struct Inputs<'a> {
    /// A checkpoint's arrays and its path.
    stored: Option<(&'a [StateArray], &'a Path)>,
    kept: Vec<StateArray>,
}

impl<'a> Inputs<'a> {
    /// From the case's files.
    pub fn files() -> Self {
        Inputs { stored: None, kept: Vec::new() }
    }

    /// From the `arrays` of the `checkpoint` file (see [`STORED`]). An array it lacks (a checkpoint written
    /// before they were stored) is read from the file and not kept, so that the checkpoints of
    /// the continued run keep the layout of the one it started from.
    pub fn stored(arrays: &'a [StateArray], checkpoint: &'a Path) -> Self {
        Inputs { stored: Some((arrays, checkpoint)), kept: Vec::new() }
    }

    /// Dataset `name` of `path` as [`read`] gives it, for the array `what` (`bathymetry`,
    /// `eta`, `hu`, `hv`).
    pub fn get(
        &mut self,
        key: &str,
        what: &str,
        path: &Path,
        name: &str,
        shapes: &[[usize; 2]],
    ) -> Result<(Vec<f64>, [usize; 2])> {
        let stored_name = format!("input_{what}");
        debug_assert!(STORED.contains(&stored_name.as_str()));
        let copy = self.stored.map(|(arrays, ck)| (arrays.iter().find(|a| a.name == stored_name), ck));
        let (values, n) = match copy {
            Some((Some(a), ck)) => stored(a, shapes).map_err(|e| SimError::Input(format!("checkpoint {}: {e}", ck.display())))?,
            Some((None, _)) => return read(key, path, name, shapes),
            None => read(key, path, name, shapes)?,
        };
        let shape = vec![n[1], n[0]];
        self.kept.push(StateArray { name: stored_name, shape, values: Values::F64(values.clone()), place: None });
        Ok((values, n))
    }

    /// Where [`Inputs::get`] takes the array `what` from, for messages: the checkpoint's copy,
    /// or dataset `name` of the file `path`.
    pub fn source(&self, what: &str, path: &Path, name: &str) -> String {
        let stored_name = format!("input_{what}");
        match self.stored {
            Some((arrays, ck)) if arrays.iter().any(|a| a.name == stored_name) => {
                format!("dataset /fields/{stored_name} of checkpoint {}", ck.display())
            }
            _ => format!("dataset {name:?} of {}", path.display()),
        }
    }

    /// The arrays handed out, to be kept in the checkpoints.
    pub fn kept(self) -> Vec<StateArray> {
        self.kept
    }
}

/// A stored copy of a file array, checked as the file's was (shape, finite values).
fn stored(a: &StateArray, shapes: &[[usize; 2]]) -> Result<(Vec<f64>, [usize; 2])> {
    let name = &a.name;
    let Values::F64(values) = &a.values else {
        return input(format!("dataset /fields/{name} is not an f64 array"));
    };
    let [rows, cols] = a.shape[..] else {
        return input(format!("dataset /fields/{name} has shape {:?}; the case needs a 2-D array", a.shape));
    };
    if !shapes.contains(&[cols, rows]) {
        return input(format!("dataset /fields/{name} is {rows} x {cols}, which the case's grid does not take"));
    }
    if let Some(k) = values.iter().position(|v| !v.is_finite()) {
        return input(format!("dataset /fields/{name} holds {} at row {}, column {}", values[k], k / cols, k % cols));
    }
    Ok((values.clone(), [cols, rows]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkpoint written before the file arrays were stored: they come from the file and
    /// are not kept, so that the continued run's checkpoints keep its layout.
    #[test]
    fn arrays_a_checkpoint_lacks_come_from_the_file_and_are_not_kept() {
        let dir = std::env::temp_dir().join(format!("sim_input_file_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("b.h5");
        let values: Vec<f64> = (0..12).map(|k| 10.0 + k as f64).collect();
        let f = hdf5::File::create(&path).unwrap();
        f.new_dataset::<f64>().shape([3, 4]).create("H").unwrap().write_raw(&values).unwrap();
        drop(f);
        let get = |inputs: &mut Inputs| inputs.get("key", "bathymetry", &path, "H", &[[4, 3]]).unwrap();

        let mut fresh = Inputs::files();
        assert_eq!(get(&mut fresh), (values.clone(), [4, 3]));
        let kept = fresh.kept();
        assert_eq!((kept.len(), kept[0].name.as_str(), kept[0].shape.clone()), (1, "input_bathymetry", vec![3, 4]));

        let checkpoint = dir.join("checkpoint.h5");
        let mut old = Inputs::stored(&[], &checkpoint);
        assert_eq!(get(&mut old), (values.clone(), [4, 3]));
        assert!(old.kept().is_empty());

        // A stored copy wins over the file.
        let copy = StateArray { values: Values::F64(vec![5.0; 12]), ..kept[0].clone() };
        let stored = [copy];
        let mut new = Inputs::stored(&stored, &checkpoint);
        assert_eq!(get(&mut new), (vec![5.0; 12], [4, 3]));
        assert_eq!(new.kept(), stored);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
