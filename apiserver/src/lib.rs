//! tinykube-apiserver library.
