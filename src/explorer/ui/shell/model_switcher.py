"""Switching models: the model picker in the prompt bar and the Model menu, loading a big
model off the UI thread, opening a GGUF or parameter file, and installing a known model."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

from PySide6.QtCore import QSignalBlocker
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QFileDialog, QLabel, QMenu, QToolBar

from ...core.errors import ExplorerError
from ...i18n import add_messages, tr
from ...catalog.install import ASSEMBLE, InstallCancelled, fetch_terms, install, terms_html
from ...catalog.load import default_prompt, load_model, load_params_file
from ...catalog.registry import MODELS, TEACHING, installed_path
from ...session import Session
from ...session.changes import changes_text
from .host import Host
from .found_models import FoundModelsDialog, saved_folders
from .install_dialog import InstallDialog
from .model_picker import OTHER, ModelChoice, ModelPicker, model_choices
from .prompt_bar import PromptBar
from ...units import byte_size
from .work_status import WorkStatus
from .worker import Jobs, error_message, is_big

INSTALL_STEPS = 1000          # an install's progress bar counts in these steps over its two stages
FIND = "\0find"              # the picker's last item: the models on this computer (FoundModelsDialog)

add_messages({
    # Ollama's blobs have no extension: they are recognised by the GGUF magic once chosen
    "gguf.filter": {"en": "GGUF models (*.gguf sha256-*);;All files (*)", "zh": "GGUF模型 (*.gguf sha256-*);;所有文件 (*)"},
    "action.found_models": {"en": "Models on this computer…", "zh": "本机上的模型…"},
    "picker.found": {"en": "Models on this computer…", "zh": "本机上的模型…"},
    "picker.found.tip": {"en": "GGUF models from Ollama, LM Studio, the Hugging Face cache and your folders",
                         "zh": "来自Ollama、LM Studio、Hugging Face缓存和你的文件夹的GGUF模型"},
    "model.picker": {"en": "Model:", "zh": "模型："},
    "model.loading": {"en": "Loading {name}…", "zh": "正在加载{name}…"},
    "model.loaded": {"en": "Model: {name}", "zh": "模型：{name}"},
    "model.prompt_unreadable": {"en": "its vocabulary cannot read “{prompt}”: it starts from “{default}”",
                                "zh": "它的词表无法读取“{prompt}”：改从“{default}”开始"},
    "model.label": {"en": "{n} tokens in the vocabulary", "zh": "词表{n}项"},
    "action.install_model": {"en": "Install {label} ({size})…", "zh": "安装{label}（{size}）…"},
    "model.installing": {"en": "Installing {label} (downloading {size})…", "zh": "正在安装{label}（下载{size}）…"},
    "model.downloading": {"en": "Downloading {label}: {done} of {total}", "zh": "正在下载{label}：{done} / {total}"},
    "model.assembling": {"en": "Joining and checking {label}: {done} of {total}",
                         "zh": "正在拼接并校验{label}：{done} / {total}"},
    "model.installed": {"en": "Installed {label}: {path}", "zh": "已安装{label}：{path}"},
    "install.cancel.tip": {"en": "Stop the download; nothing is written", "zh": "停止下载；不会写入任何文件"},
    "install.cancelled": {"en": "Install of {label} cancelled; nothing was written",
                          "zh": "已取消安装{label}；没有写入任何文件"},
    "work.busy": {"en": "A model or lesson is still loading; try again when it is ready.",
                  "zh": "还有模型或课程正在加载；请等它完成后再试。"},
    "params.filter": {"en": "Parameter files (*.json)", "zh": "参数文件 (*.json)"},
    "params.loaded": {"en": "Loaded {path}", "zh": "已加载 {path}"},
})


class ModelSwitcher:
    """The model picker (added to `toolbar`) and the Model menu's choices and installs
    (`menu`, whose first action is Open model file…, `open_gguf`). A chosen model is loaded (off
    the UI thread when big, `work` showing it) and the session switched to it on its default
    prompt (`prompt_bar` wraps it in the chat template when ticked). The `host` (the window)
    shows status and problems and runs changes guarded."""

    def __init__(self, host: Host, session: Session, jobs: Jobs, work: WorkStatus,
                 prompt_bar: PromptBar, toolbar: QToolBar, menu: QMenu, open_gguf: QAction):
        self.host, self.session, self.jobs, self.work, self.prompt_bar = host, session, jobs, work, prompt_bar
        self.menu, self.open_gguf_action = menu, open_gguf
        self.ask_params_path = self._ask_params_path   # dialogs are attributes: tests replace them
        self.ask_gguf_path = self._ask_gguf_path
        self.confirm_install = self._confirm_install          # (ModelSpec) -> bool; tests answer it
        self.install_dialog: InstallDialog | None = None      # while the question is asked
        self.found_dialog: FoundModelsDialog | None = None    # while the models found are listed
        self._install_cancel: threading.Event | None = None   # set: the running install stops
        self.load_model = load_model                 # (key) -> model; runs off the UI thread
        self._models: dict[str, object] = {}         # key -> loaded model (the teaching one, the last big one)
        self._opened: tuple[str, ...] = ()           # GGUF files opened here, offered in the picker
        self._synced_for = None                      # what the picker last showed
        self.loading: str | None = None              # key of the model being loaded (or a lesson's, prepared)
        self.picker_label = QLabel()
        self.picker = ModelPicker()
        self.picker.chosen.connect(self.choose_model)
        self.label = QLabel()                        # the vocabulary's size
        for widget in (self.picker_label, self.picker, self.label):
            toolbar.addWidget(widget)
        self.actions: dict[str, QAction] = {}        # one checkable choice per model
        self._menu_choices: tuple = ()
        self._group = QActionGroup(host.window())
        self._group.setExclusionPolicy(QActionGroup.ExclusionPolicy.ExclusiveOptional)
        self._separator = menu.insertSeparator(open_gguf)
        self.found_action = QAction(host.window())
        self.found_action.triggered.connect(lambda _c=False: self.show_found_models())
        menu.insertAction(open_gguf, self.found_action)
        self.install_actions: dict[str, QAction] = {}          # shown while the model is not installed
        for name in MODELS:
            action = menu.addAction("")
            action.triggered.connect(lambda _c=False, n=name: self.install_model(n))
            self.install_actions[name] = action

    def sync_shown(self) -> None:
        """The words for the model shown; the choices only when something they show has
        changed (they look at the model files), not on every slider tick."""
        lang = self.session.lang
        self.label.setText(tr("model.label", lang, n=f"{len(self.session.model.vocab):,}"))
        self.picker_label.setText(tr("model.picker", lang))
        key = (self.session.requested_model, lang, self._opened, self.loading is None)
        if key != self._synced_for:
            self._synced_for = key
            self.sync()

    def _current_key(self) -> str:
        model = self.session.requested_model
        for key, known in self._models.items():
            if known is model:
                return key
        return model.name if model.name == TEACHING or model.name in MODELS else OTHER

    def remember_model(self, key: str, model) -> None:
        """`model` was loaded from `key` (a name or a .gguf path): the picker offers and marks it.
        Big models are not kept once another is loaded (hundreds of MB each)."""
        self._models = {k: m for k, m in self._models.items() if not is_big(m) or m is self.session.model}
        self._models[key] = model
        if key != TEACHING and key not in MODELS and key not in self._opened:
            self._opened = self._opened + (key,)

    def sync(self) -> None:
        """The picker and the Model menu list the choices and mark the current model."""
        lang, idle = self.session.lang, self.loading is None
        choices = model_choices(lang, self._opened)
        current = self._current_key()
        found = ModelChoice(FIND, tr("picker.found", lang), True, tr("picker.found.tip", lang))
        self.picker.show_choices(choices + [found], current, self.session.requested_model.name, lang)
        self.picker.setEnabled(idle)
        if tuple(choices) != self._menu_choices:
            self._menu_choices = tuple(choices)
            for action in self.actions.values():
                self.menu.removeAction(action)
                self._group.removeAction(action)
            self.actions = {}
            for c in choices:
                action = QAction(c.label, self.host.window())
                action.setCheckable(True)
                action.setToolTip(c.tooltip)
                action.triggered.connect(lambda _c=False, k=c.key: self.choose_model(k))
                self._group.addAction(action)
                self.menu.insertAction(self._separator, action)
                self.actions[c.key] = action
            self.menu.setToolTipsVisible(True)
        for c in choices:
            self.actions[c.key].setChecked(c.key == current)
            self.actions[c.key].setEnabled(c.enabled and idle)
        self.open_gguf_action.setEnabled(idle)
        self.found_action.setText(tr("action.found_models", lang))
        self.found_action.setEnabled(idle)
        for name, action in self.install_actions.items():
            s = MODELS[name]
            action.setText(tr("action.install_model", lang, label=s.label, size=byte_size(s.size)))
            action.setVisible(installed_path(name) is None)
            action.setEnabled(idle)

    def choose_model(self, key: str) -> None:
        """Switch to a model by key; a big one loads off the UI thread. A model that cannot be
        loaded (not installed, a broken file) is reported and the current one stays."""
        if key == FIND:
            with QSignalBlocker(self.picker):          # the picker shows the current model again
                self.picker.setCurrentIndex(max(0, self.picker.findData(self._current_key())))
            self.show_found_models()
            return
        if self.loading is not None or key == self._current_key():
            self.sync()
            return
        if key in self._models:
            self._model_loaded(key, self._models[key])
            return
        if key == TEACHING:                 # built in and instant
            try:
                model = self.load_model(TEACHING)
            except ExplorerError as exc:
                self.host.report_error(str(exc))
                return
            self._model_loaded(key, model)
            return
        self.loading = key
        name = self.picker.itemText(max(0, self.picker.findData(key))) or key
        self.work.show(tr("model.loading", self.session.lang, name=name), cancel=False)
        self.sync()
        loader = self.load_model
        self.jobs.start(lambda _report: loader(key), lambda model: self._model_loaded(key, model),
                        self.work_failed)

    def work_failed(self, exc, tb: str) -> None:
        """A model load, a model install or a lesson's preparation failed: said, nothing changes."""
        self.loading = None
        self.work.hide()
        self.sync()
        self.host.report_error(error_message(exc, tb))

    def _model_loaded(self, key: str, model) -> None:
        """Switch the session to a loaded model, on its default prompt (the session picks
        the runner for it). A lesson playing is left first (its frames' words would be
        wrong about another model)."""
        was_loading, self.loading = self.loading, None
        if was_loading is not None:
            self.work.hide()
        ids, said = self._prompt_for(key, model)
        if ids is None:
            self.sync()
            return
        s = self.session
        old = dict(self._models), self._opened
        self.remember_model(key, model)
        # a lesson's words are about its own model: it is left for free exploration
        leaving, kept = s.in_lesson, []
        ok = (self.host.guarded(lambda: kept.extend(s.free_run(model, ids))) if leaving
              else self.host.guarded(s.set_model, model, ids))
        if not ok:
            self._models, self._opened = old
        else:
            parts = [tr("model.loaded", s.lang, name=model.name), said, getattr(model, "load_note", "")]
            if leaving:
                parts.append(tr("change.left_lesson", s.lang, kept=tr("change.kept", s.lang, items=changes_text(
                    kept, s.lang, with_lesson=False)) if kept else ""))
            self.host.show_status(" · ".join(p for p in parts if p), 12000)
        self.sync()

    def _prompt_for(self, key: str, model) -> tuple[tuple[int, ...] | None, str]:
        """The prompt the new model starts on: the teacher's (typed in free exploration, or over
        a lesson's), if its vocabulary reads it, else its default prompt (and a sentence saying
        so); a lesson's own prompt stays with the lesson. (None, "") if neither encodes."""
        s, lang = self.session, self.session.lang
        teachers = not s.in_lesson or any(c.setting == "prompt" for c in s.frame.changed) \
            or self.prompt_bar.edit.isModified()
        # what the box shows (also a prompt entered and still computing), not a logits list
        text = self.prompt_bar.edit.text() if teachers and not self.prompt_bar.editing_logits else None
        if text:
            try:
                return self.prompt_bar.prompt_ids(model, text), ""
            except ExplorerError:
                pass
        default = default_prompt(key, model)
        try:
            ids = self.prompt_bar.prompt_ids(model, default)
        except ExplorerError as exc:
            self.host.report_error(str(exc))
            return None, ""
        said = tr("model.prompt_unreadable", lang, prompt=text, default=default) if text and text != default else ""
        return ids, said

    def install_model(self, name: str, then: Callable[[], object] | None = None) -> bool:
        """Download and install a known real model in the background, as `explorer model
        install NAME` does, once the teacher agrees (and, for a model under terms, has
        accepted them); `then()` runs when it is installed. Cancel stops it and nothing is
        written. False if nothing started (declined, or other work is running)."""
        s = MODELS[name]
        if self.loading is not None:
            self.host.show_status(tr("work.busy", self.session.lang), 8000)
            return False
        if not self.confirm_install(s):
            return False
        lang = self.session.lang
        self.loading = name
        cancel = self._install_cancel = threading.Event()
        self.work.show(tr("model.installing", lang, label=s.label, size=byte_size(s.size)), cancel=True)
        self.work.cancel_button.setToolTip(tr("install.cancel.tip", lang))
        self.sync()

        def work(report):
            def progress(stage, done, total):      # both stages on one bar: [download | join and check]
                report(INSTALL_STEPS * ((stage == ASSEMBLE) * total + done) // (2 * total), INSTALL_STEPS)
            return install(name, accept_terms=True, log=lambda _line: None, progress=progress,
                           cancelled=cancel.is_set)

        self.jobs.start(work, lambda path: self._installed(s, path, then),
                        lambda exc, tb: self._install_failed(s, exc, tb),
                        lambda done, total: self._install_progress(s, done, total))
        return True

    def cancel_install(self) -> None:
        """Stop the running install (nothing is written)."""
        if self._install_cancel is not None:
            self._install_cancel.set()

    def _install_progress(self, s, done: int, total: int) -> None:
        """The bar over both stages; the label says which and how far, in bytes."""
        half = total / 2
        stage = "model.assembling" if done >= half else "model.downloading"
        bytes_done = round(s.size * (done - half if done >= half else done) / half)
        self.work.show_fraction(tr(stage, self.session.lang, label=s.label, done=byte_size(bytes_done),
                                   total=byte_size(s.size)), done, total)

    def _installed(self, s, path, then) -> None:
        self.loading = self._install_cancel = None
        self.work.hide()
        self.sync()                               # the picker offers it now
        self.host.show_status(tr("model.installed", self.session.lang, label=s.label, path=str(path)), 15000)
        if then is not None:
            then()

    def _install_failed(self, s, exc, tb: str) -> None:
        """Cancelled: said in the status bar; any other failure is reported."""
        self._install_cancel = None
        if not isinstance(exc, InstallCancelled):
            self.work_failed(exc, tb)
            return
        self.loading = None
        self.work.hide()
        self.sync()
        self.host.show_status(tr("install.cancelled", self.session.lang, label=s.label), 15000)

    def _confirm_install(self, s) -> bool:
        """Ask (InstallDialog, modal). A model's terms are fetched while it is open."""
        dialog = self.install_dialog = InstallDialog(self.host.window(), s, self.session.lang)
        closed = threading.Event()
        if s.terms is not None:
            shown = lambda: self.install_dialog is dialog         # not closed meanwhile
            self.jobs.start(lambda _report: fetch_terms(s.name, cancelled=closed.is_set),
                            lambda _path: shown() and dialog.show_terms(terms_html(s.name)),
                            lambda exc, tb: shown() and dialog.terms_unavailable(error_message(exc)))
        try:
            return dialog.exec() == InstallDialog.DialogCode.Accepted
        finally:
            closed.set()
            self.install_dialog = None
            dialog.deleteLater()

    def show_found_models(self) -> None:
        """List the models on this computer (window-modal, returns at once); the one opened
        from it is loaded, and the folders added are remembered in the settings."""
        if self.found_dialog is not None:
            return
        settings = self.host.settings
        dialog = self.found_dialog = FoundModelsDialog(self.host.window(), self.session.lang,
                                                       saved_folders(settings["model_folders"]))

        def finished(_result):
            self.found_dialog = None
            settings["model_folders"] = json.dumps(dialog.folders)
            dialog.deleteLater()
            if dialog.chosen is not None:
                self.choose_model(dialog.chosen)

        dialog.finished.connect(finished)
        dialog.open()

    def _ask_gguf_path(self) -> str:
        path, _ = QFileDialog.getOpenFileName(self.host.window(), tr("action.open_gguf", self.session.lang), "",
                                              tr("gguf.filter", self.session.lang))
        return path

    def open_gguf(self) -> None:
        """Open a .gguf model file; a bad one (truncated, wrong magic, unsupported quantisation,
        missing tensors) is reported by name and the current model stays."""
        path = self.ask_gguf_path()
        if path:
            self.choose_model(str(path))

    def _ask_params_path(self) -> str:
        path, _ = QFileDialog.getOpenFileName(self.host.window(), tr("action.open_params", self.session.lang), "",
                                              tr("params.filter", self.session.lang))
        return path

    def open_params(self, path: str | None = None) -> None:
        """Load a parameter file (`path`, else the one the teacher picks); a bad one is
        reported by name and the current model stays."""
        path = path or self.ask_params_path()
        if not path:
            return
        try:
            model = load_params_file(path)
        except (ExplorerError, OSError) as exc:
            self.host.report_error(str(exc))
            return
        if self.host.guarded(self.session.set_model, model):
            self.host.show_status(tr("params.loaded", self.session.lang, path=path), 8000)
