"""Slide-ready pictures and handout data of frames and lessons: PNG, PDF, SVG, CSV, JSON."""
