"""The core, the session and the Qt-free export code never load Qt; no import cycle through
the window."""

import subprocess
import sys

CHECK = """
import sys
import explorer.core.decoder, explorer.core.generate, explorer.core.sampling, explorer.core.beam
import explorer.core.table_model, explorer.core.teaching, explorer.core.params_io, explorer.core.run_dict
import explorer.cli_trace, explorer.cli_sample, explorer.cli
import explorer.session, explorer.session.narration
import explorer.export.spec, explorer.export.files, explorer.export.handouts, explorer.export.pptx_deck
import explorer.cli_export
qt = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph', 'PyQt5', 'PyQt6'))
print(','.join(qt))
"""


def test_core_imports_without_qt():
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


TEACHING_ONLY = """
import sys
from explorer.models import load_model
from explorer.core.generate import generate
from explorer.core.sampling import SamplingConfig
model = load_model("teaching")
run = generate(model, model.vocab.encode("我爱"), SamplingConfig(max_new_tokens=3))
assert len(run.steps) > 1
print("numba" in sys.modules)
"""


def test_the_teaching_model_never_loads_numba():
    """numba (0.3 s to import, more to compile) is for quantised GGUF matrices only."""
    proc = subprocess.run([sys.executable, "-c", TEACHING_ONLY], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_the_slide_code_imports_no_window():
    """ui/slides draws panels, never the window (whose File menu imports the export actions):
    the export code no longer goes through the window and back."""
    check = ("import sys, explorer.ui.slides.job, explorer.ui.export_actions; "
             "print('explorer.ui.window' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
