"""The foundation every layer stands on: configuration, errors, safe output, tool paths, progress,
cache folders, and a command's end on a signal (its child processes and scratch folders)."""
