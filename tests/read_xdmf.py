"""Read an XDMF sidecar with one of VTK's XDMF readers and print what it found as JSON.

Usage: python3 tests/read_xdmf.py legacy FILE.xmf     (vtkXdmfReader, VTK's Python package)
       pvpython tests/read_xdmf.py xdmf3 FILE.xmf     (vtkXdmf3Reader, only in ParaView)

Output: {"times": [...] or null, "points": N, "point": {name: [values]}, "cell": {...}}
"""
import json
import sys

from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline

kind, path = sys.argv[1], sys.argv[2]
if kind == "legacy":
    from vtkmodules.vtkIOXdmf2 import vtkXdmfReader as Reader
else:
    from vtkmodules.vtkIOXdmf3 import vtkXdmf3Reader as Reader

r = Reader()
r.SetFileName(path)
r.UpdateInformation()
info = r.GetOutputInformation(0)
key = vtkStreamingDemandDrivenPipeline.TIME_STEPS()
times = list(info.Get(key)) if info.Has(key) else None
r.Update()
data = r.GetOutputDataObject(0)
while data.IsA("vtkMultiBlockDataSet"):
    data = data.GetBlock(0)


def arrays(fd):
    return {fd.GetArrayName(k): vtk_to_numpy(fd.GetArray(k)).astype("float64").ravel().tolist()
            for k in range(fd.GetNumberOfArrays())}


print(json.dumps({"times": times, "points": data.GetNumberOfPoints(),
                  "point": arrays(data.GetPointData()), "cell": arrays(data.GetCellData())}))
