"""The foundation every layer stands on: configuration, errors, safe output, tool paths, progress."""
