"""The window's rooms around the panels: dock layout, prompt bar, model and lesson switchers,
the start page, dialogs, background work and export actions."""
