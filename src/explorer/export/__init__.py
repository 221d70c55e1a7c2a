"""The Qt-free side of exports: what to export (spec), handout data (CSV, JSON), the
PowerPoint deck around slide pictures, and writing files all-or-nothing. The slides
themselves are drawn by `ui.slides`."""
