"""Help → Keyboard shortcuts (read from the window's own actions, so the list is always the
keys that work) and Help → About (the version and the licence of every model it can use)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QHeaderView, QMessageBox, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from ... import __version__
from ...catalog.registry import MODELS
from ...i18n import add_messages, tr

add_messages({
    "help.shortcuts.title": {"en": "Keyboard shortcuts", "zh": "键盘快捷键"},
    "help.shortcuts.what": {"en": "What it does", "zh": "作用"},
    "help.shortcuts.keys": {"en": "Keys", "zh": "按键"},
    "help.shortcuts.or": {"en": " or ", "zh": " 或 "},
    "help.escape": {"en": "Leave the text field you are typing in; again: leave presentation mode "
                          "or put a full-screen panel back",
                    "zh": "离开正在输入的文本框；再按一次：退出演示模式，或把全屏面板放回原处"},
    "help.click_bar": {"en": "Force that token (what-if); Ctrl+Z undoes it",
                       "zh": "人为指定这个Token（假设实验）；Ctrl+Z撤销"},
    "help.click_bar.keys": {"en": "Click a bar of the distribution", "zh": "点击分布图中的柱子"},
    "help.typing": {"en": "While you type in a text field, the arrow keys, Home, End and Space edit the "
                          "text; Enter runs the prompt and gives the keys back to the player.",
                    "zh": "在文本框中输入时，方向键、Home、End和空格用于编辑文字；按回车运行提示，"
                          "按键重新交给播放器。"},
    "help.about.title": {"en": "About Token Explorer", "zh": "关于 Token 探索器"},
    "help.about.text": {
        "en": "Token Explorer {version}\n\nShows, with real numbers computed on this computer, how a "
              "language model produces text one token at a time.\n\nModels and their licences:\n{models}",
        "zh": "Token 探索器 {version}\n\n用在本机实时计算的真实数字，展示语言模型如何一次生成一个Token。"
              "\n\n模型及其许可：\n{models}"},
    "help.about.teaching": {"en": "The course's teaching model and the lessons' table models: part of "
                                  "Token Explorer",
                            "zh": "课程的教学模型和课程中的概率表模型：Token 探索器自带"},
})


def shortcut_rows(actions: dict[str, QAction], lang: str) -> list[tuple[str, str]]:
    """(what it does, its keys) for every action with a shortcut, in menu order, then the
    keys that are no action's: Escape and a click on a bar."""
    sep = tr("help.shortcuts.or", lang)
    rows = [(action.text().replace("&", ""), keys) for action in actions.values()
            if (keys := sep.join(k.toString(QKeySequence.SequenceFormat.NativeText)
                                 for k in action.shortcuts() if not k.isEmpty()))]
    rows.append((tr("help.escape", lang), "Esc"))
    rows.append((tr("help.click_bar", lang), tr("help.click_bar.keys", lang)))
    return rows


def show_shortcuts(parent: QWidget, actions: dict[str, QAction], lang: str) -> QDialog:
    """The list of shortcuts in a dialog that does not block the window."""
    dialog = QDialog(parent)
    dialog.setObjectName("shortcuts-dialog")
    dialog.setWindowTitle(tr("help.shortcuts.title", lang))
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    rows = shortcut_rows(actions, lang)
    table = QTableWidget(len(rows) + 1, 2, dialog)     # the last row: a note on typing
    table.setHorizontalHeaderLabels([tr("help.shortcuts.what", lang), tr("help.shortcuts.keys", lang)])
    table.verticalHeader().hide()
    table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
    table.setWordWrap(True)
    for r, (what, keys) in enumerate(rows):
        table.setItem(r, 0, QTableWidgetItem(what))
        table.setItem(r, 1, QTableWidgetItem(keys))
    table.setItem(len(rows), 0, QTableWidgetItem(tr("help.typing", lang)))
    table.setSpan(len(rows), 0, 1, 2)
    table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, dialog)
    buttons.rejected.connect(dialog.close)
    layout = QVBoxLayout(dialog)
    layout.addWidget(table)
    layout.addWidget(buttons)
    dialog.resize(760, 620)
    dialog.show()
    table.resizeRowsToContents()      # at the widths the shown columns have (a wrapped row's height follows them)
    return dialog


def about_text(lang: str) -> str:
    models = "\n".join(f"• {spec.label}: {spec.licence}" for spec in MODELS.values())
    models += f"\n• {tr('help.about.teaching', lang)}"
    return tr("help.about.text", lang, version=__version__, models=models)


def show_about(parent: QWidget, lang: str) -> QMessageBox:
    box = QMessageBox(QMessageBox.Icon.Information, tr("help.about.title", lang), about_text(lang),
                      QMessageBox.StandardButton.Ok, parent)
    box.setObjectName("about-box")
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.setWindowModality(Qt.WindowModality.NonModal)
    box.show()
    return box
