"""Example task programs, shipped with the package so that `hts demo` finds them anywhere."""
