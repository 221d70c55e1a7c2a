"""Slides for a projector: a frame's title, the panels it points to laid out large with
type sized for the room, and a caption strip (`compose`); the old full-window picture
(`window_style`); the files a deck is written as (`job`)."""
