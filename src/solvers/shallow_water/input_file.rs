//! Arrays from an HDF5 or NetCDF-4 file (NetCDF-4 is HDF5): bathymetry and initial fields.

use std::path::Path;

use crate::error::{Result, input};

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
    let h5 = hdf5::File::open(path)
        .map_err(|e| crate::error::SimError::Input(format!("{key}: {file}: not a readable HDF5/NetCDF-4 file ({e})")))?;
    let ds = h5
        .dataset(name)
        .map_err(|_| crate::error::SimError::Input(format!("{key}: {file} has no dataset {name:?}")))?;
    let shape = ds.shape();
    let wanted = shapes.iter().map(|[c, r]| format!("{r} x {c}")).collect::<Vec<_>>().join(" or ");
    let [rows, cols] = shape[..] else {
        return input(format!("{key}: dataset {name:?} of {file} has shape {shape:?}; needs {wanted} (rows x columns)"));
    };
    if !shapes.contains(&[cols, rows]) {
        return input(format!("{key}: dataset {name:?} of {file} is {rows} x {cols}; needs {wanted} (rows x columns)"));
    }
    let values: Vec<f64> = ds
        .read_raw::<f64>()
        .map_err(|e| crate::error::SimError::Input(format!("{key}: cannot read dataset {name:?} of {file} as numbers ({e})")))?;
    // NetCDF marks missing data (land, gaps) with the variable's fill value.
    for attr in ["_FillValue", "missing_value"] {
        let Some(fill) = ds.attr(attr).and_then(|a| a.read_scalar::<f64>()).ok() else { continue };
        if let Some(k) = values.iter().position(|&v| v == fill) {
            return input(format!(
                "{key}: dataset {name:?} of {file} holds its {attr} {fill:e} (missing data) at row {}, column {}",
                k / cols,
                k % cols
            ));
        }
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
