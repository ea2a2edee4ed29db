"""Render the last output step of a sim run directory to a PNG.

    pvbatch  scripts/render.py RUN_DIR [--out FILE.png] [--field NAME] [--size 1200x900]
    pvpython scripts/render.py ...
    python3  scripts/render.py ...          (VTK's Python package: pip install vtk)

It reads the run's .pvd, takes its last file (.vti grid or .vtu point cloud) and draws the
file's main field (its active scalars, or --field) with a colour bar, arrows of the
velocity where the file has a vector field (at the points, or at the cell centres for cell
data, as shallow water writes it), and for point clouds the region around the bodies (wall
points, point_type 0). 1D grids are drawn as the graph of the field. The
script uses only VTK classes, so ParaView's interpreters and VTK's Python package run it
alike. Without a display, Debian's ParaView needs a virtual X server:

    xvfb-run -a pvbatch scripts/render.py out/heat2d_gaussian

(`pvbatch --force-offscreen-rendering` aborts there); VTK's Python package renders
off-screen through EGL by itself. On success it prints one JSON line: the file, field,
vectors, time, PNG, and the view (centre, half-height of the picture in model units).
"""
import argparse
import json
import math
import os
import sys
import xml.etree.ElementTree as ET

from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkCommonCore import vtkDoubleArray, vtkPoints
from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkImageData, vtkPolyData, vtkPolyLine
from vtkmodules.vtkCommonExecutionModel import vtkTrivialProducer
from vtkmodules.vtkFiltersCore import vtkGlyph3D
try:
    from vtkmodules.vtkFiltersCore import vtkCellCenters
except ImportError:  # older VTK (older ParaView builds) has it in FiltersGeneral
    from vtkmodules.vtkFiltersGeneral import vtkCellCenters
from vtkmodules.vtkFiltersGeometry import vtkDataSetSurfaceFilter
from vtkmodules.vtkFiltersSources import vtkArrowSource
from vtkmodules.vtkIOImage import vtkPNGWriter
from vtkmodules.vtkIOXML import vtkXMLImageDataReader, vtkXMLUnstructuredGridReader
from vtkmodules.vtkRenderingAnnotation import vtkScalarBarActor
from vtkmodules.vtkRenderingCore import (
    vtkActor,
    vtkColorTransferFunction,
    vtkPolyDataMapper,
    vtkRenderer,
    vtkRenderWindow,
    vtkTextActor,
    vtkWindowToImageFilter,
)
import vtkmodules.vtkRenderingFreeType  # noqa: F401  (text)
import vtkmodules.vtkRenderingOpenGL2  # noqa: F401  (the render window)

BACKGROUND = (1.0, 1.0, 1.0)


def fail(msg):
    print(f"render.py: {msg}", file=sys.stderr)
    sys.exit(2)


def last_file(run):
    """The last file of the run's .pvd series (or `run` itself if it is a .vti/.vtu)."""
    if os.path.isfile(run) and run.endswith((".vti", ".vtu")):
        return run
    if os.path.isfile(run) and run.endswith(".pvd"):
        pvd = run
    else:
        found = sorted(f for f in os.listdir(run) if f.endswith(".pvd")) if os.path.isdir(run) else []
        if not found:
            fail(f"no .pvd in {run}")
        pvd = os.path.join(run, found[0])
    try:
        entries = [d for d in ET.parse(pvd).getroot().iter("DataSet")]
    except (OSError, ET.ParseError) as e:
        fail(f"cannot read {pvd}: {e}")
    if not entries:
        fail(f"{pvd} lists no files")
    last = max(entries, key=lambda d: float(d.get("timestep")))
    return os.path.join(os.path.dirname(pvd), last.get("file"))


def read(path):
    reader = vtkXMLImageDataReader() if path.endswith(".vti") else vtkXMLUnstructuredGridReader()
    reader.SetFileName(path)
    reader.Update()
    data = reader.GetOutput()
    if data is None or data.GetNumberOfPoints() == 0:
        fail(f"cannot read {path}")
    return data


def field_of(data, name):
    """(array, 'point' | 'cell') of the field to colour by."""
    for kind, fd in (("point", data.GetPointData()), ("cell", data.GetCellData())):
        if name is None and fd.GetScalars() is not None:
            return fd.GetScalars(), kind
        if name is not None and fd.GetArray(name) is not None:
            return fd.GetArray(name), kind
    if name is not None:
        fail(f"no field {name}")
    pd = data.GetPointData()
    if pd.GetNumberOfArrays() == 0:
        fail("the file has no point fields")
    return pd.GetArray(0), "point"


def colours(lo, hi):
    """ParaView's 'Cool to Warm' map over [lo, hi]."""
    if hi <= lo:
        hi = lo + 1.0
    ctf = vtkColorTransferFunction()
    ctf.SetColorSpaceToDiverging()
    ctf.AddRGBPoint(lo, 0.230, 0.299, 0.754)
    ctf.AddRGBPoint(hi, 0.706, 0.016, 0.150)
    return ctf


def graph(data, array, scale_y):
    """A 1D grid's field as the polyline (x, scale_y * value), coloured by the value."""
    nx = data.GetDimensions()[0]
    ox, dx = data.GetOrigin()[0], data.GetSpacing()[0]
    points, line = vtkPoints(), vtkPolyLine()
    line.GetPointIds().SetNumberOfIds(nx)
    for i in range(nx):
        points.InsertNextPoint(ox + i * dx, scale_y * array.GetValue(i), 0.0)
        line.GetPointIds().SetId(i, i)
    lines = vtkCellArray()
    lines.InsertNextCell(line)
    poly = vtkPolyData()
    poly.SetPoints(points)
    poly.SetLines(lines)
    poly.GetPointData().AddArray(array)
    source = vtkTrivialProducer()
    source.SetOutput(poly)
    return source


def view_box(data):
    """(xmin, xmax, ymin, ymax) to show: clouds around their wall points, else everything."""
    b = data.GetBounds()
    box = [b[0], b[1], b[2], b[3]]
    kind = data.GetPointData().GetArray("point_type")
    if kind is not None:
        wall = vtk_to_numpy(kind) == 0
        if wall.any():
            p = vtk_to_numpy(data.GetPoints().GetData())[wall]
            size = max(p[:, 0].max() - p[:, 0].min(), p[:, 1].max() - p[:, 1].min())
            box = [p[:, 0].min() - 0.4 * size, p[:, 0].max() + 0.4 * size,
                   p[:, 1].min() - 0.4 * size, p[:, 1].max() + 0.4 * size]
    return box


def arrows(data, box, vectors, at_cells=False):
    """Arrow glyphs of `vectors` on about 25 x 25 places of the view: points, or with
    `at_cells` cell centres (shallow water stores its velocity as cell data)."""
    vec = vtk_to_numpy(vectors)
    if isinstance(data, vtkImageData):
        nx, ny, _ = data.GetDimensions()
        ox, oy, _ = data.GetOrigin()
        dx, dy, _ = data.GetSpacing()
        half = 0.0
        if at_cells:
            # Cell (i, j) lies between points i, i + 1 and j, j + 1.
            nx, ny, half = max(1, nx - 1), max(1, ny - 1), 0.5
        sx, sy = max(1, nx // 25), max(1, ny // 25)
        index = [j * nx + i for j in range(sy // 2, ny, sy) for i in range(sx // 2, nx, sx)]
        xy = [(ox + (k % nx + half) * dx, oy + (k // nx + half) * dy) for k in index]
    else:
        if at_cells:
            centres = vtkCellCenters()
            centres.SetInputData(data)
            centres.Update()
            pts = vtk_to_numpy(centres.GetOutput().GetPoints().GetData())
        else:
            pts = vtk_to_numpy(data.GetPoints().GetData())
        cell = max(box[1] - box[0], box[3] - box[2]) / 25.0
        taken = {}
        for k, (x, y, _) in enumerate(pts):
            if box[0] <= x <= box[1] and box[2] <= y <= box[3]:
                taken.setdefault((int((x - box[0]) / cell), int((y - box[2]) / cell)), k)
        index = sorted(taken.values())
        xy = [(pts[k][0], pts[k][1]) for k in index]
    if not index:
        return None
    top = max(math.hypot(vec[k][0], vec[k][1]) for k in index) or 1.0
    points, v = vtkPoints(), vtkDoubleArray()
    v.SetNumberOfComponents(3)
    for (x, y), k in zip(xy, index):
        points.InsertNextPoint(x, y, 0.01)
        v.InsertNextTuple3(vec[k][0], vec[k][1], 0.0)
    poly = vtkPolyData()
    poly.SetPoints(points)
    poly.GetPointData().SetVectors(v)
    glyph = vtkGlyph3D()
    glyph.SetInputData(poly)
    arrow = vtkArrowSource()
    arrow.Update()
    glyph.SetSourceData(arrow.GetOutput())
    glyph.SetVectorModeToUseVector()
    glyph.SetScaleModeToScaleByVector()
    glyph.SetScaleFactor(0.9 * max(box[1] - box[0], box[3] - box[2]) / 25.0 / top)
    glyph.OrientOn()
    mapper = vtkPolyDataMapper()
    mapper.SetInputConnection(glyph.GetOutputPort())
    mapper.ScalarVisibilityOff()
    actor = vtkActor()
    actor.SetMapper(mapper)
    actor.GetProperty().SetColor(0.1, 0.1, 0.1)
    return actor


def main():
    ap = argparse.ArgumentParser(description="Render the last step of a sim run to PNG.")
    ap.add_argument("run", help="run directory (or its .pvd, or one .vti/.vtu file)")
    ap.add_argument("--out", help="PNG to write (default: next to the file, same name)")
    ap.add_argument("--field", help="field to colour by (default: the file's active scalars)")
    ap.add_argument("--size", default="1200x900", help="picture size WxH")
    args = ap.parse_args()
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
        if width < 1 or height < 1:
            raise ValueError
    except ValueError:
        fail(f"--size {args.size}: give WxH in pixels, e.g. 1200x900")

    path = last_file(args.run)
    data = read(path)
    array, kind = field_of(data, args.field)
    name = array.GetName()
    comp = -1 if array.GetNumberOfComponents() > 1 else 0
    lo, hi = array.GetRange(comp)
    tv = data.GetFieldData().GetArray("TimeValue")
    time = tv.GetValue(0) if tv is not None else None

    one_d = isinstance(data, vtkImageData) and data.GetDimensions()[1] == 1
    surface = vtkDataSetSurfaceFilter()
    surface.SetInputData(data)
    source = surface
    box = view_box(data)
    if one_d:
        # The graph of the field: y = value, scaled to half the length of the line.
        span = max(hi - lo, abs(hi), 1e-300)
        scale_y = 0.5 * (box[1] - box[0]) / span
        source = graph(data, array, scale_y)
        box = [box[0], box[1], scale_y * min(lo, 0.0), scale_y * max(hi, 0.0)]
    mapper = vtkPolyDataMapper()
    mapper.SetInputConnection(source.GetOutputPort())
    if kind == "point":
        mapper.SetScalarModeToUsePointFieldData()
    else:
        mapper.SetScalarModeToUseCellFieldData()
    mapper.SelectColorArray(name)
    lut = colours(lo, hi)
    if comp < 0:
        lut.SetVectorModeToMagnitude()
    mapper.SetLookupTable(lut)
    mapper.SetUseLookupTableScalarRange(True)
    mapper.ScalarVisibilityOn()
    actor = vtkActor()
    actor.SetMapper(mapper)
    if one_d:
        actor.GetProperty().SetLineWidth(3)

    ren = vtkRenderer()
    ren.SetBackground(*BACKGROUND)
    ren.AddActor(actor)
    vectors, at_cells = data.GetPointData().GetVectors(), False
    if vectors is None:
        vectors, at_cells = data.GetCellData().GetVectors(), True
    if vectors is not None and not one_d:
        glyphs = arrows(data, box, vectors, at_cells)
        if glyphs is not None:
            ren.AddActor(glyphs)
    bar = vtkScalarBarActor()
    bar.SetLookupTable(lut)
    bar.SetTitle(name)
    bar.SetNumberOfLabels(5)
    bar.UnconstrainedFontSizeOn()
    bar.SetWidth(0.08)
    bar.SetHeight(0.7)
    bar.SetPosition(0.9, 0.15)
    for t, size in ((bar.GetTitleTextProperty(), height // 30), (bar.GetLabelTextProperty(), height // 45)):
        t.SetColor(0.0, 0.0, 0.0)
        t.SetFontSize(max(10, size))
    ren.AddViewProp(bar)
    title = vtkTextActor()
    when = "" if time is None else f"  t = {time:.6g}"
    title.SetInput(f"{os.path.basename(path)}: {name}{when}")
    title.GetTextProperty().SetColor(0.0, 0.0, 0.0)
    title.GetTextProperty().SetFontSize(max(12, height // 40))
    title.SetPosition(10, height - height // 25 - 10)
    ren.AddViewProp(title)

    # Parallel projection on the view box, leaving the right 15 % for the colour bar.
    cx, cy = 0.5 * (box[0] + box[1]), 0.5 * (box[2] + box[3])
    half_w, half_h = 0.5 * (box[1] - box[0]), 0.5 * (box[3] - box[2])
    aspect = 0.85 * width / height
    scale = max(half_h, half_w / aspect, 1e-300) * 1.15
    cx += 0.15 * width / height * scale  # shift the model left of the bar
    cy += 0.05 * scale  # room for the title
    cam = ren.GetActiveCamera()
    cam.ParallelProjectionOn()
    cam.SetFocalPoint(cx, cy, 0.0)
    # Above the plane by the picture's size: one unit above a domain of kilometres, the
    # clipping range set from the bounds would leave the plane behind the near plane.
    cam.SetPosition(cx, cy, 10.0 * scale)
    cam.SetViewUp(0.0, 1.0, 0.0)
    cam.SetParallelScale(scale)
    ren.ResetCameraClippingRange()

    win = vtkRenderWindow()
    win.SetOffScreenRendering(1)
    win.AddRenderer(ren)
    win.SetSize(width, height)
    win.Render()
    grab = vtkWindowToImageFilter()
    grab.SetInput(win)
    grab.ReadFrontBufferOff()
    grab.Update()
    out = args.out or os.path.splitext(path)[0] + ".png"
    png = vtkPNGWriter()
    png.SetFileName(out)
    png.SetInputConnection(grab.GetOutputPort())
    png.Write()
    vec_name = vectors.GetName() if vectors is not None and not one_d else None
    print(json.dumps({"file": path, "field": name, "vectors": vec_name, "time": time, "png": out,
                      "view": {"centre": [cx, cy], "half_height": scale}}))


main()
