//! tinykube-apiserver binary.
fn main() {}
