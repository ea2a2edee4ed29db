"""Independent reader for the output of a `sim` run: reads the .pvd, every .vti it lists (with
VTK's own XML reader) and the checkpoints (with h5py), and prints what it found as JSON.

Usage: python3 tests/read_output.py RUN_DIR NAME
"""
import glob
import json
import os
import sys
import xml.etree.ElementTree as ET

import h5py
import numpy as np
from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkIOXML import vtkXMLImageDataReader


def read_vti(path):
    r = vtkXMLImageDataReader()
    r.SetFileName(path)
    r.Update()
    img = r.GetOutput()
    pd = img.GetPointData()
    arrays = {}
    for k in range(pd.GetNumberOfArrays()):
        a = pd.GetArray(k)
        arrays[a.GetName()] = {
            "type": a.GetDataTypeAsString(),
            "components": a.GetNumberOfComponents(),
            "values": vtk_to_numpy(a).astype(np.float64).ravel().tolist(),
        }
    return {
        "dims": list(img.GetDimensions()),
        "origin": list(img.GetOrigin()),
        "spacing": list(img.GetSpacing()),
        "arrays": arrays,
    }


def main():
    run_dir, name = sys.argv[1], sys.argv[2]
    pvd = ET.parse(os.path.join(run_dir, name + ".pvd")).getroot()
    series = [
        {"time": float(d.get("timestep")), "file": d.get("file")}
        for d in pvd.iter("DataSet")
    ]
    files = {s["file"]: read_vti(os.path.join(run_dir, s["file"])) for s in series}
    checkpoints = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "checkpoint_*.h5"))):
        with h5py.File(path, "r") as f:
            attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
            checkpoints[os.path.basename(path)] = {
                "step": int(attrs["step"]),
                "time": float(attrs["time"]),
                "solver": str(attrs["solver"]),
                "precision": str(attrs["precision"]),
                "format": str(attrs["format"]),
                "fields": {k: np.asarray(f["fields"][k]).astype(np.float64).ravel().tolist() for k in f["fields"]},
                "shapes": {k: list(f["fields"][k].shape) for k in f["fields"]},
            }
    json.dump({"series": series, "files": files, "checkpoints": checkpoints}, sys.stdout)


main()
