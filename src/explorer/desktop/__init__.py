"""The desktop's side: the launcher entry, the file type and the icon's sizes."""
