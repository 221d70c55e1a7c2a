"""The core, the session and the Qt-free export code never load Qt; imports only go down the
wings (cli -> ui -> lessons/export -> session/catalog/desktop -> core -> the root helpers), and
no module of explorer imports one that imports it back; folders and modules stay small."""

import subprocess
import sys

from paths import SRC

CHECK = """
import sys
import explorer.core.models.decoder, explorer.core.decode.generate, explorer.core.decode.sampling, explorer.core.decode.beam
import explorer.core.models.table_model, explorer.core.models.teaching, explorer.core.models.params_file, explorer.core.decode.run_dict
import explorer.cli.trace, explorer.cli.sample, explorer.cli.main
import explorer.session, explorer.session.narration
import explorer.export.spec, explorer.export.files, explorer.export.handouts, explorer.export.pptx_deck
import explorer.cli.export
qt = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'shiboken6', 'pyqtgraph', 'PyQt5', 'PyQt6'))
print(','.join(qt))
"""


def test_core_imports_without_qt():
    proc = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


TEACHING_ONLY = """
import sys
from explorer.catalog.load import load_model
from explorer.core.decode.generate import generate
from explorer.core.decode.sampling import SamplingConfig
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


NO_ALLOCATOR_TUNING = """
from explorer.core.gguf import heap
calls = []
heap.keep_freed_arrays = lambda: calls.append("keep")
import explorer.core.decode.sampling, explorer.core.decode.generate, explorer.session, explorer.cli.sample
from explorer.catalog.load import load_model
load_model("teaching")
print(calls)
"""


def test_importing_the_sampling_code_leaves_the_allocator_alone():
    """Tuning glibc's malloc (core.heap) is for a big model's load, never an import's side effect."""
    proc = subprocess.run([sys.executable, "-c", NO_ALLOCATOR_TUNING], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_slide_code_imports_no_window():
    """ui/slides draws panels, never the window (whose File menu imports the export actions):
    the export code no longer goes through the window and back."""
    check = ("import sys, explorer.ui.slides.job, explorer.ui.shell.export_actions; "
             "print('explorer.ui.window' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def import_graph() -> dict[str, set[str]]:
    """Module -> the explorer modules it imports (at any depth in its code), read from the source."""
    import ast
    root = SRC / "explorer"
    files = {".".join(("explorer", *f.relative_to(root).with_suffix("").parts)).removesuffix(".__init__"): f
             for f in root.rglob("*.py")}
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        graph[name] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                parts = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(parts + ([node.module] if node.module else []))
                found = [target, *(f"{target}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            else:
                continue
            graph[name] |= {module for module in found if module in files and module != name}
    return graph


def test_no_module_imports_one_that_imports_it_back():
    graph = import_graph()
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(graph[module]):
            assert state.get(target) != "open", " -> ".join([*path, target])
            if target not in state:
                visit(target, [*path, target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


# the wings from the bottom up: a module imports its own wing's and lower ones' only
RANKS = {"root": 0, "core": 1, "session": 2, "catalog": 2, "desktop": 2, "lessons": 3, "export": 3,
         "ui": 4, "cli": 5, "__main__": 6}
ROOT_HELPERS = ("i18n", "resources", "interrupts", "units")     # explorer/*.py below the core
MAX_MODULES = 8        # modules directly in a folder that has sub-folders
MAX_LINES = 700        # lines of one module


def wing(module: str) -> str:
    """explorer.core.models.decoder -> "core"; explorer, explorer.units -> "root"."""
    parts = module.split(".")
    return "root" if len(parts) == 1 or parts[1] in ROOT_HELPERS else parts[1]


def test_imports_only_go_down_the_wings():
    graph = import_graph()
    unranked = sorted({wing(m) for m in graph} - RANKS.keys())
    assert unranked == [], f"wings without a rank: {unranked}"
    upward = [f"{module} -> {target}" for module, targets in sorted(graph.items()) for target in sorted(targets)
              if RANKS[wing(target)] > RANKS[wing(module)]]
    assert upward == []


def test_panels_do_not_import_the_window_shell():
    graph = import_graph()
    found = [f"{module} -> {target}" for module, targets in sorted(graph.items()) for target in sorted(targets)
             if module.startswith("explorer.ui.panels") and target.startswith("explorer.ui.shell")]
    assert found == []


def test_no_panel_imports_another_panel():
    """A panel module (named after its panel id) uses the helpers beside it and the layers
    below, never another panel: what two panels share lives below them."""
    from explorer.session.panels import PANELS
    graph = import_graph()
    panel_modules = {f"explorer.ui.panels.{pid}" for pid in PANELS}
    assert panel_modules <= graph.keys(), sorted(panel_modules - graph.keys())
    found = [f"{module} -> {target}" for module in sorted(panel_modules) for target in sorted(graph[module])
             if target in panel_modules]
    assert found == []


def test_folders_with_sub_folders_hold_few_modules_and_modules_stay_short():
    root = SRC / "explorer"
    packages = [d for d in (root, *root.rglob("*")) if d.is_dir() and (d / "__init__.py").exists()]
    crowded = {str(d.relative_to(SRC)): n for d in packages
               if any((sub / "__init__.py").exists() for sub in d.iterdir())
               and (n := len(list(d.glob("*.py")))) > MAX_MODULES}
    assert crowded == {}, f"more than {MAX_MODULES} modules beside sub-folders"
    long = {str(f.relative_to(SRC)): n for f in root.rglob("*.py")
            if (n := len(f.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"modules over {MAX_LINES} lines"
