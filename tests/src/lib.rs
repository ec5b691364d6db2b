//! Helpers shared by the end-to-end tests: start real binaries on port 0 with temporary data dirs.
